// Facts about the public dtypes and ops, in one place.
#pragma once

#include <cstddef>

#include "kungfu/types.h"

namespace kf {

// Bytes per element; 0 for a value that is not a kf_dtype_t.
inline size_t dtype_size(kf_dtype_t dt) {
  switch (dt) {
    case KF_INT8: case KF_UINT8: return 1;
    case KF_FLOAT16: case KF_BFLOAT16: return 2;
    case KF_INT32: case KF_UINT32: case KF_FLOAT32: return 4;
    case KF_INT64: case KF_UINT64: case KF_FLOAT64: return 8;
    case KF_DTYPE_COUNT: break;
  }
  return 0;
}

inline bool op_valid(kf_op_t op) { return op >= KF_SUM && op < KF_OP_COUNT; }

const char* dtype_name(kf_dtype_t dt);
const char* op_name(kf_op_t op);

}  // namespace kf
