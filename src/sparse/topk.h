// Top-k selection by magnitude for gradient sparsification: MSTopK (the
// approximate operator of Shi et al., MLSys 2021) and an exact reference.
//
// Both functions pick k elements of x by |x| and write them as (value, index)
// pairs: values[j] == x[indices[j]] (the signed value), indices distinct and
// in ascending order. They write exactly min(k, d) pairs; with k >= d every
// element is returned. When min(k, d) > 0, NaN or Inf anywhere in x is
// KF_ERR_INVALID_ARGUMENT (the message names the first such index). d must be
// below 2^32 so that indices fit in uint32. Nothing is written on error.
//
// Both are thread safe (no shared state) and never throw except
// std::bad_alloc.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"

namespace kf {

struct TopkOptions {
  // Bisection rounds of the threshold search (count-only passes), >= 0. More
  // rounds narrow the band the last slots are drawn from; beyond about 32 a
  // round can change nothing and the search stops early.
  int rounds = 20;
  // Seeds the choice of the window in the band: equal seeds (and inputs) give
  // equal outputs, whatever the number of threads or the kernel ISA.
  uint64_t seed = 0;
  // Threads of the passes over x: 0 = automatic (the hardware's, fewer for
  // small d), otherwise 1 .. 1024.
  int threads = 0;
};

// MSTopK: bisects a threshold on |x| between mean(|x|) and max(|x|) with
// count-only passes, keeps every element at or above the upper bound found
// (at most k of them), and fills the remaining slots with a contiguous window,
// starting at a seeded random position, of the band between the lower and the
// upper bound (elements in index order). x, values and indices may be null
// only when min(k, d) == 0; values and indices must not overlap x.
Status mstopk(const float* x, size_t d, size_t k, const TopkOptions& options, float* values,
              uint32_t* indices);

// Exact top-k by |x|: std::nth_element on the magnitudes (a selection, not a
// sort), then one pass in index order. Of elements tied at the k-th largest
// magnitude, the lowest indices are taken. Single-threaded.
Status exact_topk(const float* x, size_t d, size_t k, float* values, uint32_t* indices);

}  // namespace kf
