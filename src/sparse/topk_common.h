// What mstopk.cc and exact_topk.cc share: argument checks, the block
// structure of the passes and the threads that run them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/status.h"

namespace kf {
namespace topk {

// Passes work on fixed blocks of x, whatever the number of threads: per-block
// results combined in block order make the output independent of threading.
constexpr size_t kBlock = size_t{1} << 16;

inline size_t block_count(size_t n) {
  return (n + kBlock - 1) / kBlock;
}

// Checks d < 2^32 and the pointers needed for min(k, d) pairs. `who` names
// the function in the message.
Status check_args(const char* who, const float* x, size_t d, size_t k, const float* values,
                  const uint32_t* indices);

// KF_ERR_INVALID_ARGUMENT naming the first NaN or Inf of x (one must exist).
Status non_finite_error(const char* who, const float* x, size_t d);

// Writes all d pairs (k >= d): values = x, indices = 0 .. d-1.
void copy_all(const float* x, size_t d, float* values, uint32_t* indices);

// The thread count for `blocks` blocks: `requested` (0 = automatic) capped
// by the number of blocks.
int thread_count(int requested, size_t blocks);

// Runs fn(b) for every block b < blocks, on `threads` threads (the caller's
// included), each taking a contiguous range of blocks. If a thread cannot be
// started, the caller runs its range.
template <typename Fn>
void for_blocks(size_t blocks, int threads, Fn&& fn);

}  // namespace topk
}  // namespace kf

#include "sparse/topk_common_inl.h"
