// MSTopK on the CPU: one pass for mean(|x|) and max(|x|), count-only passes
// driven by the threshold search (topk_search.h), one pass that writes.
//
// Once the lower bound of the bracket holds at most 1/16 of x, every later
// probe and the final selection only see those candidates, so they are copied
// out (value and index) and the remaining rounds count over the copy. The
// result is the same as counting over x every time; on the usual gradient
// shapes this leaves about three passes over x instead of one per round.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "sparse/topk.h"
#include "sparse/topk_common.h"
#include "sparse/topk_kernels.h"
#include "sparse/topk_search.h"

namespace kf {
namespace {

using topk::block_count;
using topk::kBlock;

// What the passes read: x itself, or the copied candidates with their indices.
struct Source {
  const float* values;
  const uint32_t* indices;  // null: the index is the position
  size_t n;

  size_t block_size(size_t b) const { return std::min(kBlock, n - b * kBlock); }
};

// counts[b] = the number of elements of block b with key >= t; returns the sum.
uint64_t count_blocks(const topk::TopkKernels& kern, const Source& src, uint32_t t, int threads,
                      std::vector<uint64_t>* counts) {
  counts->assign(block_count(src.n), 0);
  topk::for_blocks(counts->size(), threads, [&](size_t b) {
    (*counts)[b] = kern.count_ge(src.values + b * kBlock, src.block_size(b), t);
  });
  uint64_t total = 0;
  for (uint64_t c : *counts) total += c;
  return total;
}

// Writes what kern.select() picks from src, given the per-block counts at t1
// (above) and at t2 (above + band); every block knows where its output and its
// band ordinals start from the counts alone, so the blocks run in parallel.
void select_all(const topk::TopkKernels& kern, const Source& src,
                const std::vector<uint64_t>& above, const std::vector<uint64_t>& at_t2, uint32_t t1,
                uint32_t t2, uint64_t win_lo, uint64_t win_hi, int threads, float* values,
                uint32_t* indices) {
  const size_t blocks = block_count(src.n);
  std::vector<uint64_t> band_start(blocks), out_start(blocks);
  uint64_t band = 0, out = 0;
  for (size_t b = 0; b < blocks; ++b) {
    band_start[b] = band;
    out_start[b] = out;
    const uint64_t in_band = at_t2[b] - above[b];
    const uint64_t lo = std::max(band, win_lo), hi = std::min(band + in_band, win_hi);
    out += above[b] + (hi > lo ? hi - lo : 0);
    band += in_band;
  }
  topk::for_blocks(blocks, threads, [&](size_t b) {
    kern.select(src.values + b * kBlock,
                src.indices != nullptr ? src.indices + b * kBlock : nullptr, b * kBlock,
                src.block_size(b), t1, t2, band_start[b], win_lo, win_hi, values, indices,
                out_start[b]);
  });
}

// Copies the elements of x with key >= t (at_t[b] of them in block b) to
// values / indices.
void compact_all(const topk::TopkKernels& kern, const Source& x, const std::vector<uint64_t>& at_t,
                 uint32_t t, int threads, float* values, uint32_t* indices) {
  std::vector<uint64_t> out_start(at_t.size());
  uint64_t out = 0;
  for (size_t b = 0; b < at_t.size(); ++b) {
    out_start[b] = out;
    out += at_t[b];
  }
  topk::for_blocks(at_t.size(), threads, [&](size_t b) {
    kern.compact(x.values + b * kBlock, x.block_size(b), t, b * kBlock, values + out_start[b],
                 indices + out_start[b], at_t[b]);
  });
}

std::vector<uint64_t> block_sizes(const Source& src) {
  std::vector<uint64_t> sizes(block_count(src.n));
  for (size_t b = 0; b < sizes.size(); ++b) sizes[b] = src.block_size(b);
  return sizes;
}

}  // namespace

Status mstopk(const float* x, size_t d, size_t k, const TopkOptions& options, float* values,
              uint32_t* indices) {
  KF_RETURN_IF_ERROR(topk::check_args("mstopk", x, d, k, values, indices));
  if (options.rounds < 0) {
    return invalid_argument("mstopk: rounds = " + std::to_string(options.rounds) + " is negative");
  }
  if (options.threads < 0 || options.threads > 1024) {
    return invalid_argument("mstopk: threads = " + std::to_string(options.threads) +
                            " is not in [0, 1024] (0 = automatic)");
  }
  if (d == 0 || k == 0) return Status::ok();

  const topk::TopkKernels& kern = topk::topk_kernels();
  const size_t blocks = block_count(d);
  const int threads = topk::thread_count(options.threads, blocks);
  Source src{x, nullptr, d};

  // Pass 1: mean and max of |x| (and the NaN/Inf check: their keys are the largest).
  std::vector<double> sums(blocks);
  std::vector<uint32_t> maxima(blocks);
  topk::for_blocks(blocks, threads, [&](size_t b) {
    kern.stats(x + b * kBlock, src.block_size(b), &sums[b], &maxima[b]);
  });
  const uint32_t max_key = *std::max_element(maxima.begin(), maxima.end());
  if (max_key >= topk::kInfKey) return topk::non_finite_error("mstopk", x, d);
  if (k >= d) {
    topk::copy_all(x, d, values, indices);
    return Status::ok();
  }
  double total = 0.0;
  for (double s : sums) total += s;  // in block order: the same for every thread count
  const uint32_t mean_key = topk::key_of(static_cast<float>(total / static_cast<double>(d)));

  // The search. above / at_t2 hold the per-block counts at the bracket's t1
  // and t2 over the current source.
  topk::ThresholdSearch search(d, k, mean_key, max_key, options.rounds);
  std::vector<uint64_t> above(blocks, 0), at_t2 = block_sizes(src), counts;
  // Not value-initialised: compact_all writes every element.
  std::unique_ptr<float[]> cand_values;
  std::unique_ptr<uint32_t[]> cand_indices;
  int src_threads = threads;
  bool compacted = false;
  uint32_t t = 0;
  while (search.next(&t)) {
    const uint64_t n = count_blocks(kern, src, t, src_threads, &counts);
    search.report(t, n);
    (n <= k ? above : at_t2).swap(counts);
    const topk::Bracket& br = search.bracket();
    if (!compacted && br.k2 <= d / 16) {
      cand_values.reset(new float[br.k2]);
      cand_indices.reset(new uint32_t[br.k2]);
      compact_all(kern, src, at_t2, br.t2, threads, cand_values.get(), cand_indices.get());
      src = Source{cand_values.get(), cand_indices.get(), static_cast<size_t>(br.k2)};
      compacted = true;
      src_threads = topk::thread_count(options.threads, block_count(src.n));
      at_t2 = block_sizes(src);
      if (br.k1 == 0) {
        above.assign(at_t2.size(), 0);
      } else {
        count_blocks(kern, src, br.t1, src_threads, &above);
      }
    }
  }

  // Everything at or above t1, then k - k1 consecutive band elements from a
  // seeded start.
  const topk::Bracket& br = search.bracket();
  const uint64_t need = k - br.k1;
  const uint64_t start = need > 0 ? topk::window_start(options.seed, br.k2 - br.k1, need) : 0;
  select_all(kern, src, above, at_t2, br.t1, br.t2, start, start + need, src_threads, values,
             indices);
  return Status::ok();
}

}  // namespace kf
