// Element-wise reduction kernels for every dtype x op.
#pragma once

#include <cstddef>

#include "kungfu/types.h"

namespace kf {

// inout[i] = inout[i] (op) in[i] for i < count. For KF_AVG this is a sum: the
// division happens once, in finish_average(). float16 and bfloat16 are
// widened to float32, combined, and rounded to nearest-even once.
// Integer sum and prod wrap around (no undefined behaviour).
// `inout` and `in` may be the same pointer but must not partly overlap.
void reduce_into(kf_dtype_t dtype, kf_op_t op, void* inout, const void* in, size_t count);

// out[i] = a[i] (op) b[i]; out may equal a or b.
void reduce_to(kf_dtype_t dtype, kf_op_t op, void* out, const void* a, const void* b, size_t count);

// buf[i] /= nranks: the last step of KF_AVG. Integers truncate toward zero.
void finish_average(kf_dtype_t dtype, void* buf, size_t count, int nranks);

}  // namespace kf
