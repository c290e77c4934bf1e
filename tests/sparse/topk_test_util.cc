#include "topk_test_util.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "sparse/topk_search.h"

namespace kf_test {

std::vector<float> gaussian(size_t d, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(d);
  for (float& v : x) v = dist(rng);
  return x;
}

std::vector<float> heavy_tailed(size_t d, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::student_t_distribution<float> dist(2.0f);
  std::vector<float> x(d);
  for (float& v : x) v = dist(rng);
  return x;
}

Pairs sorted_topk(const std::vector<float>& x, size_t k) {
  std::vector<uint32_t> order(x.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&x](uint32_t a, uint32_t b) {
    const float fa = std::fabs(x[a]), fb = std::fabs(x[b]);
    return fa != fb ? fa > fb : a < b;
  });
  order.resize(std::min(k, x.size()));
  std::sort(order.begin(), order.end());
  Pairs p;
  for (uint32_t i : order) {
    p.values.push_back(x[i]);
    p.indices.push_back(i);
  }
  return p;
}

Pairs naive_mstopk(const std::vector<float>& x, size_t k, int rounds, uint64_t seed) {
  using kf::topk::key_of;
  const size_t d = x.size();
  // The mean in the library's documented order: blocks of 65536, 32 float
  // lanes per block added in order in double, blocks added in order.
  double total = 0.0;
  uint32_t max_key = 0;
  for (size_t b = 0; b < d; b += 65536) {
    float lane[32] = {};
    for (size_t i = b; i < std::min(d, b + 65536); ++i) lane[(i - b) % 32] += std::fabs(x[i]);
    double s = 0.0;
    for (float l : lane) s += l;
    total += s;
  }
  for (float v : x) max_key = std::max(max_key, key_of(v));
  const uint32_t mean_key = key_of(static_cast<float>(total / static_cast<double>(d)));

  kf::topk::ThresholdSearch search(d, k, mean_key, max_key, rounds);
  uint32_t t = 0;
  while (search.next(&t)) {
    uint64_t n = 0;
    for (float v : x) n += key_of(v) >= t;
    search.report(t, n);
  }
  const kf::topk::Bracket br = search.bracket();
  const uint64_t need = k - br.k1;
  const uint64_t start = need > 0 ? kf::topk::window_start(seed, br.k2 - br.k1, need) : 0;
  Pairs p;
  uint64_t ordinal = 0;
  for (size_t i = 0; i < d; ++i) {
    const uint32_t key = key_of(x[i]);
    bool take = key >= br.t1;
    if (!take && key >= br.t2) {
      take = ordinal >= start && ordinal < start + need;
      ++ordinal;
    }
    if (take) {
      p.values.push_back(x[i]);
      p.indices.push_back(static_cast<uint32_t>(i));
    }
  }
  return p;
}

double l1(const std::vector<float>& values) {
  double s = 0.0;
  for (float v : values) s += std::fabs(v);
  return s;
}

}  // namespace kf_test
