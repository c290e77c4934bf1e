// The two passes MSTopK makes over x, one table per instruction set. Every
// table gives bit-identical results (the baseline loops define them); they
// differ only in speed. The table follows the reduction kernels' choice
// (algo/kernels/kernels.h: the best ISA of the CPU, KF_KERNEL_ISA,
// kernels_force_isa()), so one knob switches both.
#pragma once

#include <cstddef>
#include <cstdint>

#include "algo/kernels/kernels.h"

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
};

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
