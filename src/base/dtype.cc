#include "base/dtype.h"

namespace kf {

const char* dtype_name(kf_dtype_t dt) {
  static const char* names[] = {"int8",    "uint8",    "int32",   "uint32",  "int64",
                                "uint64",  "float16",  "bfloat16", "float32", "float64"};
  return dtype_size(dt) == 0 ? "invalid" : names[dt];
}

const char* op_name(kf_op_t op) {
  static const char* names[] = {"sum", "prod", "min", "max", "avg"};
  return op_valid(op) ? names[op] : "invalid";
}

}  // namespace kf
