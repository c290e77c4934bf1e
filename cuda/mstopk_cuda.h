// MSTopK on a CUDA device: the same operator as kf::mstopk (sparse/topk.h) on
// device memory, driven by the same threshold search (sparse/topk_search.h)
// and summing |x| in the same order, so for equal inputs and seeds it selects
// exactly the pairs the CPU selects, in the same (ascending index) order.
//
// Part of the optional libkungfu_cuda (built when CMake finds the CUDA
// toolkit); libkungfu itself never needs CUDA.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.h"
#include "sparse/topk.h"

namespace kf {
namespace cuda {

// Whether a CUDA device can be used; if not, *why says what failed (no
// driver, no device...).
bool device_available(std::string* why);

// MSTopK of x[0 .. d) on the current device. x, values (min(k, d) floats) and
// indices (min(k, d) uint32) are device pointers; the scalar parameters and
// errors are those of kf::mstopk (options.threads is ignored). Work is queued
// on `stream` (0 = the default stream); the call returns when the pairs are
// written. A CUDA failure is KF_ERR_SYSTEM naming the call that failed.
Status mstopk_device(const float* x, size_t d, size_t k, const TopkOptions& options, float* values,
                     uint32_t* indices, cudaStream_t stream);

}  // namespace cuda
}  // namespace kf
