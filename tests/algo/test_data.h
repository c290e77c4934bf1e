// Element access and reference arithmetic for the algorithm tests. Integer
// values are carried as uint64_t bit patterns normalized to their dtype
// (sign-extended for signed types); floating values as double.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kungfu/types.h"

#include "base/dtype.h"

namespace kf {
namespace test {

bool is_float(kf_dtype_t t);
bool is_signed_int(kf_dtype_t t);
// Sizes and names come from the library's own table (base/dtype.h).
inline size_t esize(kf_dtype_t t) { return dtype_size(t); }

// A scalar of any dtype: `i` for integer dtypes, `f` for floating ones.
struct Value {
  uint64_t i = 0;
  double f = 0;
};

Value get(kf_dtype_t t, const void* buf, size_t idx);
void set(kf_dtype_t t, void* buf, size_t idx, Value v);

// The reference of one reduction step and of the final KF_AVG division,
// computed independently of src/algo (wrapping in uint64_t, floats in double).
Value ref_combine(kf_dtype_t t, kf_op_t op, Value a, Value b);
Value ref_average(kf_dtype_t t, Value sum, int n);

// Input element idx of `rank`: integers over their whole range (so sums and
// products wrap), floats small integers whose sums and products are exact
// even in bfloat16 for up to 8 ranks.
Value input_value(kf_dtype_t t, kf_op_t op, int rank, size_t idx);

// Whether got equals want: exactly, or within a relative tolerance that fits
// the dtype when `approx` (KF_AVG of floats).
bool same(kf_dtype_t t, Value got, Value want, bool approx);

std::string value_text(kf_dtype_t t, Value v);

}  // namespace test
}  // namespace kf
