// The reduction entry points: argument edge cases here, the work in the
// kernel table chosen at run time (algo/kernels/). The dispatch on dtype and
// op happens once per call, never per element.
#include "algo/reduce_kernels.h"

#include "algo/kernels/kernels.h"

namespace kf {
namespace {

bool valid(kf_dtype_t dtype) {
  return static_cast<unsigned>(dtype) < KF_DTYPE_COUNT;
}
bool valid(kf_op_t op) {
  return static_cast<unsigned>(op) < KF_OP_COUNT;
}

}  // namespace

void reduce_to(kf_dtype_t dtype, kf_op_t op, void* out, const void* a, const void* b,
               size_t count) {
  if (count == 0 || !valid(dtype) || !valid(op)) return;
  active_kernels().combine[dtype][op](out, a, b, count);
}

void reduce_into(kf_dtype_t dtype, kf_op_t op, void* inout, const void* in, size_t count) {
  reduce_to(dtype, op, inout, inout, in, count);
}

void finish_average(kf_dtype_t dtype, void* buf, size_t count, int nranks) {
  if (count == 0 || nranks <= 1 || !valid(dtype)) return;
  active_kernels().divide[dtype](buf, count, nranks);
}

}  // namespace kf
