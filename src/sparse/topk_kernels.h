// The two passes MSTopK makes over x, one table per instruction set. Every
// table gives bit-identical results (the baseline loops define them); they
// differ only in speed. The table follows the reduction kernels' choice
// (algo/kernels/kernels.h: the best ISA of the CPU, KF_KERNEL_ISA,
// kernels_force_isa()), so one knob switches both.
#pragma once

#include <cstddef>
#include <cstdint>

#include "algo/kernels/kernels.h"
#include "sparse/topk_search.h"

namespace kf {
namespace topk {

// The lanes of the |x| sum: lane j adds the elements j, j + 32, j + 64, ...
// of a block in order, in float; the lanes are then added in order in double.
// Fixing the order makes the mean, and so the whole search, independent of
// ISA and of how blocks are spread over threads.
constexpr size_t kSumLanes = 32;

struct TopkKernels {
  // The sum of |x[0 .. n)| in the lane order above, and the largest key.
  void (*stats)(const float* x, size_t n, double* abs_sum, uint32_t* max_key);
  // The number of i < n with key(x[i]) >= t.
  uint64_t (*count_ge)(const float* x, size_t n, uint32_t t);
  // The final selection (and the copy of candidates) over n elements of src:
  // every element with key >= t1, and the band elements (t2 <= key < t1)
  // whose band ordinal, counted from band_ordinal at src[0], lies in
  // [win_lo, win_hi); written in index order from out position `pos` on. The
  // index of src[i] is idx[i], or base + i when idx is null.
  void (*select)(const float* src, const uint32_t* idx, size_t base, size_t n, uint32_t t1,
                 uint32_t t2, uint64_t band_ordinal, uint64_t win_lo, uint64_t win_hi,
                 float* out_values, uint32_t* out_indices, size_t pos);
  // The copy of candidates: writes every element of x[0 .. n) with key >= t
  // as (value, base + i), in index order, and returns how many. `room` is the
  // space at the outputs, at least that count; nothing is written past it
  // (blocks write side by side in parallel).
  size_t (*compact)(const float* x, size_t n, uint32_t t, size_t base, float* out_values,
                    uint32_t* out_indices, size_t room);
};

// One element's part of select(), shared by every ISA: the element has key >= t2.
inline void select_one(const float* src, const uint32_t* idx, size_t base, size_t i, uint32_t key,
                       uint32_t t1, uint64_t* band_ordinal, uint64_t win_lo, uint64_t win_hi,
                       float* out_values, uint32_t* out_indices, size_t* pos) {
  if (key < t1) {
    const uint64_t ordinal = (*band_ordinal)++;
    if (ordinal < win_lo || ordinal >= win_hi) return;
  }
  out_values[*pos] = src[i];
  out_indices[*pos] = idx != nullptr ? idx[i] : static_cast<uint32_t>(base + i);
  ++*pos;
}

// compact() one element at a time from element i of x on (the baseline's
// whole loop, a vector kernel's tail), writing from out position `pos`;
// returns the position after the last element written.
inline size_t compact_from(const float* x, size_t i, size_t n, uint32_t t, size_t base,
                           float* out_values, uint32_t* out_indices, size_t pos) {
  for (; i < n; ++i) {
    if (key_of(x[i]) < t) continue;
    out_values[pos] = x[i];
    out_indices[pos] = static_cast<uint32_t>(base + i);
    ++pos;
  }
  return pos;
}

// The table of the ISA the reduction kernels use now.
const TopkKernels& topk_kernels();
// The table of a given ISA. Precondition: kernel_isa_supported(isa).
const TopkKernels& topk_kernels(KernelIsa isa);

namespace detail {
const TopkKernels& baseline_topk_kernels();
const TopkKernels* avx2_topk_kernels();  // nullptr when not built for x86-64
}  // namespace detail

}  // namespace topk
}  // namespace kf
