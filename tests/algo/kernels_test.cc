// Reduction kernels against independent scalar references. Every kernel test
// runs once per kernel ISA this machine supports (baseline, avx2):
// Isa/Kernels.<test>/<isa>.
#include "algo/kernels/kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <ostream>
#include <random>
#include <vector>

#include "algo/half.h"
#include "algo/kernels/scalar.h"
#include "algo/reduce_kernels.h"
#include "sixteen_bit.h"
#include "test_data.h"

namespace kf {

// gtest prints the parameter of a failing Isa/Kernels test with this.
void PrintTo(KernelIsa isa, std::ostream* os) {
  *os << kernel_isa_name(isa);
}

namespace test {
namespace {

// ---------------------------------------------------------------------------
// reduce_to / reduce_into against the per-element reference, with every
// aliasing pattern the header allows.

const kf_dtype_t kDtypes[] = {KF_INT8,   KF_UINT8,   KF_INT32,    KF_UINT32,  KF_INT64,
                              KF_UINT64, KF_FLOAT16, KF_BFLOAT16, KF_FLOAT32, KF_FLOAT64};
const kf_op_t kOps[] = {KF_SUM, KF_PROD, KF_MIN, KF_MAX, KF_AVG};

// Random bits for integers; random floats (including negative and tiny) for
// floating types, stored through the dtype so they are representable.
std::vector<char> random_buffer(kf_dtype_t t, size_t n, std::mt19937_64& rng) {
  std::vector<char> b(n * esize(t) + 1);
  std::uniform_real_distribution<double> real(-100, 100);
  for (size_t i = 0; i < n; ++i) {
    Value v;
    v.i = rng();
    v.f = real(rng);
    if (i % 17 == 0) v.f *= 1e-6;
    if (i % 29 == 0) v.f = 0;
    if (!is_float(t)) {
      std::memcpy(b.data() + i * esize(t), &v.i, esize(t));
    } else {
      set(t, b.data(), i, v);
    }
  }
  return b;
}

// The expected bits of a op b: integers via the wrapping reference; floats
// combined in the compute type of the dtype and rounded like the kernel.
void expect_element(kf_dtype_t t, kf_op_t op, const char* a, const char* b, const char* got,
                    size_t i, const char* mode) {
  const Value va = get(t, a, i), vb = get(t, b, i), vg = get(t, got, i);
  SCOPED_TRACE(std::string(dtype_name(t)) + " " + op_name(op) + " " + mode + " at " +
               std::to_string(i));
  if (!is_float(t)) {
    ASSERT_EQ(vg.i, ref_combine(t, op, va, vb).i);
    return;
  }
  if (t == KF_FLOAT64) {
    ASSERT_EQ(vg.f, ref_combine(t, op, va, vb).f);
    return;
  }
  // float32 compute: the reference combines in double and rounds once to
  // float, which equals float arithmetic for one + or * (double has more than
  // twice float's precision), then rounds to the 16-bit type if needed.
  const float r = static_cast<float>(ref_combine(t, op, va, vb).f);
  Value want;
  want.f = r;
  std::vector<char> tmp(8);
  set(t, tmp.data(), 0, want);
  ASSERT_EQ(std::memcmp(tmp.data(), got + i * esize(t), esize(t)), 0)
      << value_text(t, vg) << " vs " << value_text(t, get(t, tmp.data(), 0));
}

// ---------------------------------------------------------------------------
// reduce_to / reduce_into / finish_average, run once per kernel ISA: the
// fixture switches the table the public functions use.

class Kernels : public ::testing::TestWithParam<KernelIsa> {
 protected:
  void SetUp() override {
    if (!kernel_isa_supported(GetParam())) {
      GTEST_SKIP() << kernel_isa_name(GetParam()) << " is not supported on this machine";
    }
    ASSERT_TRUE(kernels_force_isa(kernel_isa_name(GetParam())));
    ASSERT_EQ(active_kernels().isa, GetParam());
  }
  void TearDown() override { kernels_force_isa("auto"); }
};

TEST_P(Kernels, EveryDtypeAndOpMatchesScalarReference) {
  std::mt19937_64 rng(42);
  const size_t n = 1037;  // odd: exercises the vector loops' remainders
  for (kf_dtype_t t : kDtypes) {
    for (kf_op_t op : kOps) {
      const std::vector<char> a = random_buffer(t, n, rng);
      const std::vector<char> b = random_buffer(t, n, rng);
      const size_t bytes = n * esize(t);

      std::vector<char> out(a.size());
      reduce_to(t, op, out.data(), a.data(), b.data(), n);
      for (size_t i = 0; i < n; ++i) expect_element(t, op, a.data(), b.data(), out.data(), i, "to");

      std::vector<char> io = a;  // out == a
      reduce_into(t, op, io.data(), b.data(), n);
      ASSERT_EQ(std::memcmp(io.data(), out.data(), bytes), 0) << dtype_name(t) << op_name(op);

      io = b;  // out == b
      reduce_to(t, op, io.data(), a.data(), io.data(), n);
      ASSERT_EQ(std::memcmp(io.data(), out.data(), bytes), 0) << dtype_name(t) << op_name(op);

      io = a;  // out == a == b
      reduce_to(t, op, io.data(), io.data(), io.data(), n);
      for (size_t i = 0; i < n; ++i)
        expect_element(t, op, a.data(), a.data(), io.data(), i, "self");
    }
  }
}

TEST_P(Kernels, ZeroCountTouchesNothing) {
  int32_t x = 7;
  reduce_to(KF_INT32, KF_SUM, &x, &x, &x, 0);
  finish_average(KF_INT32, &x, 0, 3);
  EXPECT_EQ(x, 7);
}

TEST_P(Kernels, IntegersWrapAround) {
  int8_t a8[] = {127, -128, 100, -1};
  const int8_t b8[] = {1, -1, 100, -128};
  reduce_into(KF_INT8, KF_SUM, a8, b8, 4);
  EXPECT_EQ(a8[0], -128);
  EXPECT_EQ(a8[1], 127);
  EXPECT_EQ(a8[2], -56);
  EXPECT_EQ(a8[3], 127);

  uint8_t u8[] = {200, 255};
  const uint8_t v8[] = {2, 255};
  reduce_into(KF_UINT8, KF_PROD, u8, v8, 2);
  EXPECT_EQ(u8[0], 144);
  EXPECT_EQ(u8[1], 1);

  int32_t a32[] = {std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min(), 65536};
  const int32_t b32[] = {1, -1, 65536};
  int32_t s32[3];
  reduce_to(KF_INT32, KF_SUM, s32, a32, b32, 3);
  EXPECT_EQ(s32[0], std::numeric_limits<int32_t>::min());
  EXPECT_EQ(s32[1], std::numeric_limits<int32_t>::max());
  reduce_to(KF_INT32, KF_PROD, s32, a32, b32, 3);
  EXPECT_EQ(s32[1], std::numeric_limits<int32_t>::min());  // INT_MIN * -1 wraps to itself
  EXPECT_EQ(s32[2], 0);                                    // 2^32 wraps to 0

  int64_t a64[] = {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  const int64_t b64[] = {-1, 2};
  reduce_into(KF_INT64, KF_PROD, a64, b64, 2);
  EXPECT_EQ(a64[0], std::numeric_limits<int64_t>::min());
  EXPECT_EQ(a64[1], -2);

  uint64_t u64[] = {~uint64_t{0}};
  const uint64_t one[] = {1};
  reduce_into(KF_UINT64, KF_SUM, u64, one, 1);
  EXPECT_EQ(u64[0], 0u);
}

TEST_P(Kernels, MinMaxPropagateNaN) {
  const float nan = std::nanf("");
  float a[] = {nan, 1.0f, nan};
  const float b[] = {1.0f, nan, 2.0f};
  float mn[3], mx[3];
  reduce_to(KF_FLOAT32, KF_MIN, mn, a, b, 3);
  reduce_to(KF_FLOAT32, KF_MAX, mx, a, b, 3);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(std::isnan(mn[i])) << i;
    EXPECT_TRUE(std::isnan(mx[i])) << i;
  }
  const uint16_t hn[] = {0x7e00, 0x3c00};
  uint16_t hb[] = {0x3c00, 0x7e00};
  reduce_into(KF_FLOAT16, KF_MIN, hb, hn, 2);
  EXPECT_TRUE(half_is_nan(hb[0]));
  EXPECT_TRUE(half_is_nan(hb[1]));
}

TEST_P(Kernels, SixteenBitSumRoundsOnceToEven) {
  // 2048 + 1 is not a half; the float32 sum is exact and rounds (tie) to even 2048.
  uint16_t a[] = {float_to_half(2048.0f), float_to_half(2048.0f)};
  const uint16_t b[] = {float_to_half(1.0f), float_to_half(3.0f)};
  reduce_into(KF_FLOAT16, KF_SUM, a, b, 2);
  EXPECT_EQ(half_to_float(a[0]), 2048.0f);
  EXPECT_EQ(half_to_float(a[1]), 2052.0f);  // 2051 ties between 2050 and 2052: even mantissa
  // Overflow to Inf.
  uint16_t big[] = {0x7bff};
  reduce_into(KF_FLOAT16, KF_SUM, big, big, 1);
  EXPECT_EQ(big[0], 0x7c00);
  // bfloat16: 256 + 1 ties to 256.
  uint16_t c[] = {float_to_bf16(256.0f)};
  const uint16_t d[] = {float_to_bf16(1.0f)};
  reduce_into(KF_BFLOAT16, KF_SUM, c, d, 1);
  EXPECT_EQ(bf16_to_float(c[0]), 256.0f);
}

TEST_P(Kernels, AverageTruncatesIntegersTowardZero) {
  int8_t i8[] = {-7, 7, -128, 127};
  finish_average(KF_INT8, i8, 4, 2);
  EXPECT_EQ(i8[0], -3);
  EXPECT_EQ(i8[1], 3);
  EXPECT_EQ(i8[2], -64);
  EXPECT_EQ(i8[3], 63);
  int32_t i32[] = {-10, 10, -1};
  finish_average(KF_INT32, i32, 3, 3);
  EXPECT_EQ(i32[0], -3);
  EXPECT_EQ(i32[1], 3);
  EXPECT_EQ(i32[2], 0);
  int64_t i64[] = {std::numeric_limits<int64_t>::min()};
  finish_average(KF_INT64, i64, 1, 7);
  EXPECT_EQ(i64[0], std::numeric_limits<int64_t>::min() / 7);
  uint8_t u8[] = {255};
  finish_average(KF_UINT8, u8, 1, 4);
  EXPECT_EQ(u8[0], 63);
  uint64_t u64[] = {~uint64_t{0}};
  finish_average(KF_UINT64, u64, 1, 3);
  EXPECT_EQ(u64[0], ~uint64_t{0} / 3);
}

TEST_P(Kernels, AverageOfFloats) {
  float f[] = {3.0f, -1.0f};
  finish_average(KF_FLOAT32, f, 2, 2);
  EXPECT_EQ(f[0], 1.5f);
  EXPECT_EQ(f[1], -0.5f);
  double d[] = {1.0};
  finish_average(KF_FLOAT64, d, 1, 3);
  EXPECT_EQ(d[0], 1.0 / 3);
  uint16_t h[] = {float_to_half(1.0f)};
  finish_average(KF_FLOAT16, h, 1, 3);
  EXPECT_EQ(h[0], float_to_half(1.0f / 3));
  uint16_t b[] = {float_to_bf16(1.0f)};
  finish_average(KF_BFLOAT16, b, 1, 3);
  EXPECT_EQ(b[0], float_to_bf16(1.0f / 3));
}

// The semantic reference of kernels/scalar.h, one element at a time (no
// vectorization, exact aliasing allowed).
template <class E>
void scalar_reference_op(kf_op_t op, void* out, const void* a, const void* b, size_t n) {
  using S = typename E::Storage;
  S* o = static_cast<S*>(out);
  const S* pa = static_cast<const S*>(a);
  const S* pb = static_cast<const S*>(b);
  switch (op) {
    case KF_SUM:
    case KF_AVG:
      return kernels::scalar_combine<E, kernels::OpSum>(o, pa, pb, n);
    case KF_PROD:
      return kernels::scalar_combine<E, kernels::OpProd>(o, pa, pb, n);
    case KF_MIN:
      return kernels::scalar_combine<E, kernels::OpMin>(o, pa, pb, n);
    case KF_MAX:
      return kernels::scalar_combine<E, kernels::OpMax>(o, pa, pb, n);
    default:
      return;
  }
}

void scalar_reference(kf_dtype_t t, kf_op_t op, void* out, const void* a, const void* b, size_t n) {
  using kernels::Native;
  switch (t) {
    case KF_INT8:
      return scalar_reference_op<Native<int8_t>>(op, out, a, b, n);
    case KF_UINT8:
      return scalar_reference_op<Native<uint8_t>>(op, out, a, b, n);
    case KF_INT32:
      return scalar_reference_op<Native<int32_t>>(op, out, a, b, n);
    case KF_UINT32:
      return scalar_reference_op<Native<uint32_t>>(op, out, a, b, n);
    case KF_INT64:
      return scalar_reference_op<Native<int64_t>>(op, out, a, b, n);
    case KF_UINT64:
      return scalar_reference_op<Native<uint64_t>>(op, out, a, b, n);
    case KF_FLOAT16:
      return scalar_reference_op<kernels::Half>(op, out, a, b, n);
    case KF_BFLOAT16:
      return scalar_reference_op<kernels::BFloat>(op, out, a, b, n);
    case KF_FLOAT32:
      return scalar_reference_op<Native<float>>(op, out, a, b, n);
    case KF_FLOAT64:
      return scalar_reference_op<Native<double>>(op, out, a, b, n);
    default:
      return;
  }
}

void scalar_reference_divide(kf_dtype_t t, void* buf, size_t n, int nranks) {
  using kernels::Native;
  using kernels::scalar_divide;
  switch (t) {
    case KF_INT8:
      return scalar_divide<Native<int8_t>>(static_cast<int8_t*>(buf), n, nranks);
    case KF_UINT8:
      return scalar_divide<Native<uint8_t>>(static_cast<uint8_t*>(buf), n, nranks);
    case KF_INT32:
      return scalar_divide<Native<int32_t>>(static_cast<int32_t*>(buf), n, nranks);
    case KF_UINT32:
      return scalar_divide<Native<uint32_t>>(static_cast<uint32_t*>(buf), n, nranks);
    case KF_INT64:
      return scalar_divide<Native<int64_t>>(static_cast<int64_t*>(buf), n, nranks);
    case KF_UINT64:
      return scalar_divide<Native<uint64_t>>(static_cast<uint64_t*>(buf), n, nranks);
    case KF_FLOAT16:
      return scalar_divide<kernels::Half>(static_cast<uint16_t*>(buf), n, nranks);
    case KF_BFLOAT16:
      return scalar_divide<kernels::BFloat>(static_cast<uint16_t*>(buf), n, nranks);
    case KF_FLOAT32:
      return scalar_divide<Native<float>>(static_cast<float*>(buf), n, nranks);
    case KF_FLOAT64:
      return scalar_divide<Native<double>>(static_cast<double*>(buf), n, nranks);
    default:
      return;
  }
}

bool element_is_nan(kf_dtype_t t, const char* p) {
  switch (t) {
    case KF_FLOAT16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return half_is_nan(h);
    }
    case KF_BFLOAT16: {
      uint16_t b;
      std::memcpy(&b, p, 2);
      return bf16_is_nan(b);
    }
    case KF_FLOAT32: {
      float f;
      std::memcpy(&f, p, 4);
      return std::isnan(f);
    }
    case KF_FLOAT64: {
      double d;
      std::memcpy(&d, p, 8);
      return std::isnan(d);
    }
    default:
      return false;
  }
}

// got must equal want bit for bit. The one latitude: where want is NaN, got
// may be another NaN, because which input's NaN (sign and payload) a float
// sum or product propagates when both are NaN depends on the operand order
// the compiler picked for the reference. A float16 NaN result, however, must
// be the quiet NaN 0x7e00 with a sign, as float_to_half makes it.
void expect_same_elements(kf_dtype_t t, const char* got, const char* want, size_t n,
                          const std::string& what) {
  const size_t es = esize(t);
  for (size_t i = 0; i < n; ++i) {
    const char* g = got + i * es;
    const char* w = want + i * es;
    if (std::memcmp(g, w, es) == 0) continue;
    if (element_is_nan(t, w) && element_is_nan(t, g)) {
      if (t == KF_FLOAT16) {
        uint16_t h;
        std::memcpy(&h, g, 2);
        ASSERT_EQ(h & 0x7fffu, 0x7e00u) << what << " at " << i;
      }
      continue;
    }
    FAIL() << what << " at " << i << ": got " << value_text(t, get(t, g, 0)) << " want "
           << value_text(t, get(t, w, 0));
  }
}

// Arbitrary bit patterns, with the floating-point special values mixed in
// often: zeros of both signs, infinities, NaNs with payloads, subnormals,
// the extremes, and 16-bit values whose sums overflow or round.
std::vector<char> special_buffer(kf_dtype_t t, size_t n, std::mt19937_64& rng) {
  static const uint64_t f32[] = {0x00000000, 0x80000000, 0x7f800000, 0xff800000,
                                 0x7fc00000, 0xffc00001, 0x7f800001, 0x7fa00000,
                                 0x00000001, 0x807fffff, 0x7f7fffff, 0xff7fffff,
                                 0x3f800000, 0xbf800000, 0x33800000, 0x477fe000};
  static const uint64_t f64[] = {0x0ull,
                                 0x8000000000000000ull,
                                 0x7ff0000000000000ull,
                                 0xfff0000000000000ull,
                                 0x7ff8000000000000ull,
                                 0xfff8000000000123ull,
                                 0x7ff0000000000001ull,
                                 0x0000000000000001ull,
                                 0x7fefffffffffffffull,
                                 0x3ff0000000000000ull};
  static const uint64_t h16[] = {0x0000, 0x8000, 0x7c00, 0xfc00, 0x7e00, 0xfe01, 0x7c01, 0x0001,
                                 0x03ff, 0x0400, 0x7bff, 0xfbff, 0x3c00, 0x3c01, 0x6800, 0x1400};
  static const uint64_t b16[] = {0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0xffc1, 0x7f81, 0x0001,
                                 0x007f, 0x0080, 0x7f7f, 0xff7f, 0x3f80, 0x3f81, 0x4380, 0x3b80};
  const size_t es = esize(t);
  // One element more than asked for, so that data() is never null.
  std::vector<char> b((n + 1) * es);
  for (size_t i = 0; i <= n; ++i) {
    uint64_t bits = rng();
    const uint64_t pick = rng() % 64;
    if (pick < 24) {
      switch (t) {
        case KF_FLOAT32:
          bits = f32[pick % 16];
          break;
        case KF_FLOAT64:
          bits = f64[pick % 10];
          break;
        case KF_FLOAT16:
          bits = h16[pick % 16];
          break;
        case KF_BFLOAT16:
          bits = b16[pick % 16];
          break;
        default:
          if (pick < 8) bits = pick & 1 ? ~uint64_t{0} : uint64_t{1} << (es * 8 - 1);
          break;
      }
    }
    std::memcpy(b.data() + i * es, &bits, es);
  }
  return b;
}

// Lengths across every vector remainder of every dtype (AVX2 handles 4 x 32
// elements of int8 per loop trip), and a few large ones.
std::vector<size_t> test_lengths() {
  std::vector<size_t> v;
  for (size_t n = 0; n <= 67; ++n) v.push_back(n);
  for (size_t n : {127u, 128u, 129u, 1000u, 4099u, 65541u}) v.push_back(n);
  return v;
}

// reduce_to with each aliasing pattern, at element offsets that leave the
// buffers at every alignment relative to the vector width, against the
// scalar reference bit for bit; elements around the output must stay
// untouched.
TEST_P(Kernels, BitwiseLikeScalarForAllLengthsAlignmentsAndAliasing) {
  std::mt19937_64 rng(1234);
  constexpr size_t kGuard = 40;  // elements each side of the output
  const char kPoison = 0x5a;
  for (kf_dtype_t t : kDtypes) {
    const size_t es = esize(t);
    for (kf_op_t op : kOps) {
      for (size_t n : test_lengths()) {
        const size_t oa = n % 3, ob = (n / 3) % 5, oo = (n / 2) % 7;  // element offsets
        const std::vector<char> a = special_buffer(t, n + oa, rng);
        const std::vector<char> b = special_buffer(t, n + ob, rng);
        const char* pa = a.data() + oa * es;
        const char* pb = b.data() + ob * es;
        std::vector<char> want(n * es + 1);
        scalar_reference(t, op, want.data(), pa, pb, n);
        const std::string what = std::string(dtype_name(t)) + " " + op_name(op) +
                                 " n=" + std::to_string(n) + " " + kernel_isa_name(GetParam());

        for (int mode = 0; mode < 3; ++mode) {
          // The output starts kGuard + oo elements in and is followed by kGuard more.
          const size_t before = kGuard + oo;
          std::vector<char> out((before + n + kGuard) * es, kPoison);
          char* po = out.data() + before * es;
          if (mode == 0) {  // three buffers
            reduce_to(t, op, po, pa, pb, n);
          } else if (mode == 1) {  // out == a
            std::memcpy(po, pa, n * es);
            reduce_into(t, op, po, pb, n);
          } else {  // out == b
            std::memcpy(po, pb, n * es);
            reduce_to(t, op, po, pa, po, n);
          }
          expect_same_elements(t, po, want.data(), n, what + " mode " + std::to_string(mode));
          if (HasFatalFailure()) return;
          for (size_t k = 0; k < before * es; ++k) {
            ASSERT_EQ(out[k], kPoison) << what << " wrote before the output";
          }
          for (size_t k = (before + n) * es; k < out.size(); ++k) {
            ASSERT_EQ(out[k], kPoison) << what << " wrote after the output";
          }
        }

        // out == a == b.
        std::vector<char> self(a.begin() + static_cast<std::ptrdiff_t>(oa * es), a.end());
        std::vector<char> self_want(n * es + 1);
        scalar_reference(t, op, self_want.data(), self.data(), self.data(), n);
        reduce_to(t, op, self.data(), self.data(), self.data(), n);
        expect_same_elements(t, self.data(), self_want.data(), n, what + " self");
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST_P(Kernels, AverageBitwiseLikeScalarForAllLengths) {
  std::mt19937_64 rng(99);
  for (kf_dtype_t t : kDtypes) {
    const size_t es = esize(t);
    for (size_t n : test_lengths()) {
      for (int nranks : {2, 3, 7}) {
        const size_t off = n % 3;
        std::vector<char> got = special_buffer(t, n + off, rng);
        std::vector<char> want(got.begin() + static_cast<std::ptrdiff_t>(off * es), got.end());
        scalar_reference_divide(t, want.data(), n, nranks);
        finish_average(t, got.data() + off * es, n, nranks);
        expect_same_elements(t, got.data() + off * es, want.data(), n,
                             std::string(dtype_name(t)) + " avg /" + std::to_string(nranks) +
                                 " n=" + std::to_string(n));
        if (HasFatalFailure()) return;
      }
    }
  }
}

// Every float16 and bfloat16 value through the kernel's widening and
// narrowing: max(x, x) is x, and a NaN comes back as the scalar code makes it.
TEST_P(Kernels, SixteenBitConversionsOfEveryValue) {
  std::vector<uint16_t> all(0x10000), got(0x10000);
  for (uint32_t i = 0; i < 0x10000u; ++i) all[i] = static_cast<uint16_t>(i);
  reduce_to(KF_FLOAT16, KF_MAX, got.data(), all.data(), all.data(), all.size());
  for (uint32_t i = 0; i < 0x10000u; ++i) {
    ASSERT_EQ(got[i], float_to_half(half_to_float(all[i]))) << std::hex << i;
  }
  reduce_to(KF_BFLOAT16, KF_MAX, got.data(), all.data(), all.data(), all.size());
  for (uint32_t i = 0; i < 0x10000u; ++i) {
    ASSERT_EQ(got[i], float_to_bf16(bf16_to_float(all[i]))) << std::hex << i;
  }
}

// Sums and products of many random pairs of 16-bit floats (every one rounds
// once from float32) against the scalar reference.
TEST_P(Kernels, SixteenBitRoundingOfRandomPairs) {
  std::mt19937 rng(5);
  const size_t n = 1 << 18;
  for (kf_dtype_t t : {KF_FLOAT16, KF_BFLOAT16}) {
    std::vector<uint16_t> a(n), b(n), got(n), want(n);
    for (size_t i = 0; i < n; ++i) {
      a[i] = static_cast<uint16_t>(rng());
      b[i] = static_cast<uint16_t>(rng());
      // Keep half of the pairs within a factor of 2^8 of each other, where
      // sums round in every way.
      if (i & 1)
        b[i] = static_cast<uint16_t>((a[i] & 0xc000u) | (b[i] & 0x03ffu) | (a[i] & 0x3c00u));
    }
    for (kf_op_t op : {KF_SUM, KF_PROD}) {
      reduce_to(t, op, got.data(), a.data(), b.data(), n);
      scalar_reference(t, op, want.data(), a.data(), b.data(), n);
      expect_same_elements(t, reinterpret_cast<const char*>(got.data()),
                           reinterpret_cast<const char*>(want.data()), n,
                           std::string(dtype_name(t)) + " " + op_name(op));
      if (HasFatalFailure()) return;
    }
  }
}

// Signed zeros and NaN operand order, exactly as documented in scalar.h.
TEST_P(Kernels, MinMaxOfZerosAndNaNFollowOperandOrder) {
  const float nan = std::nanf(""), inf = std::numeric_limits<float>::infinity();
  const float a[] = {-0.0f, 0.0f, nan, 1.0f, -inf, -0.0f, 0.0f, nan, 1.0f, -inf};
  const float b[] = {0.0f, -0.0f, 1.0f, nan, inf, 0.0f, -0.0f, 1.0f, nan, inf};
  float mn[10], mx[10];
  reduce_to(KF_FLOAT32, KF_MIN, mn, a, b, 10);
  reduce_to(KF_FLOAT32, KF_MAX, mx, a, b, 10);
  for (int i = 0; i < 10; i += 5) {
    EXPECT_FALSE(std::signbit(mn[i + 0])) << i;  // equal: the second operand
    EXPECT_TRUE(std::signbit(mn[i + 1])) << i;
    EXPECT_TRUE(std::isnan(mn[i + 2])) << i;
    EXPECT_TRUE(std::isnan(mn[i + 3])) << i;
    EXPECT_EQ(mn[i + 4], -inf) << i;
    EXPECT_FALSE(std::signbit(mx[i + 0])) << i;
    EXPECT_TRUE(std::signbit(mx[i + 1])) << i;
    EXPECT_TRUE(std::isnan(mx[i + 2])) << i;
    EXPECT_TRUE(std::isnan(mx[i + 3])) << i;
    EXPECT_EQ(mx[i + 4], inf) << i;
  }
}

TEST_P(Kernels, SixtyFourBitProductsAndMinMaxOfLargeValues) {
  const uint64_t a[] = {0xffffffffffffffffull, 0x123456789abcdef0ull, 0x8000000000000000ull,
                        0x00000001ffffffffull, 5};
  const uint64_t b[] = {0xffffffffffffffffull, 0x0fedcba987654321ull, 0x7fffffffffffffffull,
                        0x00000001ffffffffull, 0x8000000000000001ull};
  uint64_t got[5];
  reduce_to(KF_UINT64, KF_PROD, got, a, b, 5);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(got[i], a[i] * b[i]) << i;
  reduce_to(KF_UINT64, KF_MIN, got, a, b, 5);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(got[i], a[i] < b[i] ? a[i] : b[i]) << i;
  int64_t s[5];
  reduce_to(KF_INT64, KF_MAX, s, a, b, 5);
  for (int i = 0; i < 5; ++i) {
    const int64_t x = static_cast<int64_t>(a[i]), y = static_cast<int64_t>(b[i]);
    EXPECT_EQ(s[i], x > y ? x : y) << i;
  }
}

std::string isa_test_name(const ::testing::TestParamInfo<KernelIsa>& info) {
  return kernel_isa_name(info.param);
}

INSTANTIATE_TEST_SUITE_P(Isa, Kernels, ::testing::Values(KernelIsa::kBaseline, KernelIsa::kAvx2),
                         isa_test_name);

TEST(KernelDispatch, ForceIsaAcceptsOnlyKnownSupportedNames) {
  EXPECT_FALSE(kernels_force_isa("sse9"));
  EXPECT_FALSE(kernels_force_isa(nullptr));
  ASSERT_TRUE(kernels_force_isa("baseline"));
  EXPECT_EQ(active_kernels().isa, KernelIsa::kBaseline);
  EXPECT_EQ(kernels_force_isa("avx2"), kernel_isa_supported(KernelIsa::kAvx2));
  ASSERT_TRUE(kernels_force_isa("auto"));
  // auto is the best the machine has.
  EXPECT_EQ(active_kernels().isa,
            kernel_isa_supported(KernelIsa::kAvx2) ? KernelIsa::kAvx2 : KernelIsa::kBaseline);
}

#if defined(__x86_64__)
// On an x86-64 machine with AVX2 (every CI runner), the AVX2 kernels must be
// there; a build that lost them would otherwise pass silently on baseline.
TEST(KernelDispatch, Avx2IsAvailableWhereTheCpuHasIt) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2")) GTEST_SKIP() << "no AVX2 on this CPU";
  EXPECT_TRUE(kernel_isa_supported(KernelIsa::kAvx2));
}
#endif

}  // namespace
}  // namespace test
}  // namespace kf
