// Test data and reference results of the sparse all_reduce, shared by the
// in-process and the multi-process tests. Public types only.
//
// Gradients are integer-valued floats whose magnitudes are distinct within
// what one selection ranks, so the top k is unambiguous and every sum is
// exact: a selector that returns the true top k must give these bits.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <vector>

namespace sparse_ref {

// A permutation of 0..d-1 (d prime, so any multiplier 1..d-1 works) with
// signs: x[i] = +-(1 + (a*i + b) mod d). Magnitudes 1..d, all distinct.
inline std::vector<float> perm_gradient(size_t d, uint64_t seed) {
  const uint64_t a = 1 + (seed * 7919 + 13) % (d - 1);
  const uint64_t b = (seed * 104729 + 7) % d;
  std::vector<float> x(d);
  for (size_t i = 0; i < d; ++i) {
    const float m = static_cast<float>(1 + (a * i + b) % d);
    x[i] = ((i * 31 + seed) % 3 == 0) ? -m : m;
  }
  return x;
}

// Flat test data: rank r's gradient.
inline std::vector<float> flat_gradient(size_t d, int rank) {
  return perm_gradient(d, static_cast<uint64_t>(rank) + 1);
}

// Hierarchical test data: every rank of host h has the same permutation,
// scaled by (local rank + 1), so host sums are the permutation times
// L(L+1)/2: distinct magnitudes again.
inline std::vector<float> hier_gradient(size_t d, int host, int local_rank) {
  std::vector<float> x = perm_gradient(d, static_cast<uint64_t>(host) + 1);
  for (float& v : x) v *= static_cast<float>(local_rank + 1);
  return x;
}

// Indices of the k largest |x| (exact; ties broken by index).
inline std::vector<size_t> exact_top(const float* x, size_t d, size_t k) {
  std::vector<size_t> idx(d);
  std::iota(idx.begin(), idx.end(), size_t{0});
  k = std::min(k, d);
  std::partial_sort(idx.begin(), idx.begin() + static_cast<long>(k), idx.end(),
                    [&](size_t a, size_t b) {
                      const float fa = std::fabs(x[a]), fb = std::fabs(x[b]);
                      return fa != fb ? fa > fb : a < b;
                    });
  idx.resize(k);
  return idx;
}

// Adds the top k of x into out.
inline void add_top(const float* x, size_t d, size_t k, float* out) {
  for (size_t i : exact_top(x, d, k)) out[i] += x[i];
}

// Expected flat result (sum) for `size` ranks of flat_gradient.
inline std::vector<double> flat_expected(size_t d, size_t k, int size) {
  std::vector<float> sum(d, 0.0f);
  for (int r = 0; r < size; ++r) {
    const std::vector<float> x = flat_gradient(d, r);
    add_top(x.data(), d, k, sum.data());
  }
  return std::vector<double>(sum.begin(), sum.end());
}

// The balanced piece p of n of [0, total), as the library cuts it.
inline void piece(size_t total, size_t n, size_t p, size_t* begin, size_t* len) {
  const size_t base = total / n, extra = total % n;
  *begin = p * base + std::min(p, extra);
  *len = base + (p < extra ? 1 : 0);
}

// Expected hierarchical result (sum) for H hosts x L ranks of hier_gradient.
inline std::vector<double> hier_expected(size_t d, size_t k, int hosts, int local) {
  const size_t L = static_cast<size_t>(local);
  std::vector<float> out(d, 0.0f);
  for (int h = 0; h < hosts; ++h) {
    std::vector<float> host_sum(d, 0.0f);
    for (int l = 0; l < local; ++l) {
      const std::vector<float> x = hier_gradient(d, h, l);
      for (size_t i = 0; i < d; ++i) host_sum[i] += x[i];
    }
    for (size_t p = 0; p < L; ++p) {
      size_t b, n;
      piece(d, L, p, &b, &n);
      const size_t ks = std::min((k + L - 1) / L, d / L);
      add_top(host_sum.data() + b, n, ks, out.data() + b);
    }
  }
  return std::vector<double>(out.begin(), out.end());
}

}  // namespace sparse_ref
