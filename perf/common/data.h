// Test data shared by the perf tools and the multi-process tests: dtype and op
// names, half/bfloat16 conversion, input values chosen so that every reduction
// result is exactly representable, a reference reduction with the library's
// documented semantics, and a comparison that counts wrong elements.
//
// Public API only: this code never includes the library's internal headers.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kungfu/kungfu.h"

namespace kft {

// ---- names ---------------------------------------------------------------

// "float", "int8", ... as printed in the perf tables (nccl-tests spelling).
const char* dtype_name(kf_dtype_t t);
// "sum", "prod", "min", "max", "avg".
const char* op_name(kf_op_t op);
// Accepts int8 uint8 int32 uint32 int64 uint64 half float16 bfloat16 float
// float32 double float64. Returns false for an unknown name.
bool parse_dtype(const char* s, kf_dtype_t* out);
bool parse_op(const char* s, kf_op_t* out);
bool dtype_is_float(kf_dtype_t t);
// Bytes per element, computed here (not by the library under test).
size_t element_size(kf_dtype_t t);
bool dtype_is_signed(kf_dtype_t t);

// ---- 16-bit floats -------------------------------------------------------

uint16_t float_to_half(float f);  // round to nearest even
float half_to_float(uint16_t h);
uint16_t float_to_bf16(float f);  // round to nearest even
float bf16_to_float(uint16_t b);

// ---- values --------------------------------------------------------------

// The input that `rank` contributes at element `index`, as a small integer
// that every dtype represents exactly. `salt` varies the data between runs.
//  - kind kReduce: values for `op`: prod uses {1, 2, -1} (signed) or {1, 2}
//    (unsigned) so 8 ranks give at most 256; the other ops use -3..3 (signed)
//    or 0..6 (unsigned) so sums over 8 ranks fit int8.
//  - kind kMove: values -100..100 / 0..250 that differ between ranks and
//    indices, for collectives that only move data.
enum class Kind { kReduce, kMove };
int64_t input_value(Kind kind, kf_dtype_t t, kf_op_t op, int rank, uint64_t index, uint32_t salt);

// Writes input_value(kind, t, op, rank, first + i, salt) for i < count into buf.
void fill_input(void* buf, uint64_t count, kf_dtype_t t, Kind kind, kf_op_t op, int rank,
                uint64_t first, uint32_t salt);

// Writes into `out` (count elements) the reduction over ranks 0..nranks-1 of
// their kReduce inputs at indices first .. first+count-1, with the library's
// semantics: integer sum/prod wrap (two's complement), integer avg truncates
// toward zero, half types accumulate in float32.
void fill_expected_reduce(void* out, uint64_t count, kf_dtype_t t, kf_op_t op, int nranks,
                          uint64_t first, uint32_t salt);

// Number of elements of `got` that differ from `expected`. Exact, except for
// KF_AVG on float types, which allows a relative error of avg_tolerance(t).
// If first_bad is not NULL it receives the index of the first wrong element
// (or UINT64_MAX).
uint64_t count_wrong(const void* got, const void* expected, uint64_t count, kf_dtype_t t,
                     kf_op_t op, uint64_t* first_bad);
double avg_tolerance(kf_dtype_t t);

// Element i of buf as a double (for messages).
double element_as_double(const void* buf, uint64_t i, kf_dtype_t t);

}  // namespace kft
