// Test data and reference selections for the top-k tests (and the CUDA test).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kf_test {

struct Pairs {
  std::vector<float> values;
  std::vector<uint32_t> indices;
};

std::vector<float> gaussian(size_t d, uint64_t seed);
// Student-t with 2 degrees of freedom: infinite variance, a few huge entries.
std::vector<float> heavy_tailed(size_t d, uint64_t seed);

// The exact top-k by a full sort: (|x| descending, index ascending), the
// first k, then in index order. The definition exact_topk must meet.
Pairs sorted_topk(const std::vector<float>& x, size_t k);

// MSTopK as the issue states it, with nothing clever: every probe counts over
// the whole of x, the selection is one scalar loop. mstopk() must give the
// same pairs.
Pairs naive_mstopk(const std::vector<float>& x, size_t k, int rounds, uint64_t seed);

// Sum of |v| over the pairs.
double l1(const std::vector<float>& values);

}  // namespace kf_test
