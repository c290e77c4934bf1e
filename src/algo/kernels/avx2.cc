// The AVX2 kernels: explicit 256-bit intrinsics for every (dtype, op), with
// F16C for the float16 conversions. Every function that uses AVX2 carries a
// target attribute (KF_AVX2) instead of the file being built with -mavx2, so
// nothing else in this file, nor any inline function it pulls in from a
// header, can leak AVX2 instructions into code that runs on older CPUs. The
// table is used only after kernel_isa_supported(KernelIsa::kAvx2) said yes.
//
// Results are bit-identical to kernels/scalar.h:
// - float min/max: vminps returns its second operand unless the first is
//   smaller (so NaN in the second and equal zeros give the second), and a
//   blend puts the first operand back where it is NaN: exactly nan_min/nan_max.
// - float16: vcvtph2ps is exact; vcvtps2ph with an explicit round-to-nearest-
//   even immediate rounds as float_to_half does (independent of MXCSR). NaNs
//   are first replaced by the float NaN 0x7fc00000 with their sign, so they
//   narrow to 0x7e00 | sign as float_to_half gives, not to a payload-carrying
//   NaN.
// - bfloat16: the same integer rounding as float_to_bf16, lane by lane.
// - 8-bit products (no vpmullb) multiply even and odd bytes in 16-bit lanes;
//   64-bit products (no vpmullq before AVX-512) are built from three
//   vpmuludq; 64-bit min/max use vpcmpgtq (with the sign bit flipped for
//   unsigned). All wrap like the scalar code.
// - KF_AVG's final division: vdivps/vdivpd for floating types; integer types
//   have no SIMD division and use the scalar loop.
// FMA is not used: no reduction here multiplies and adds in one step.
#include "algo/kernels/kernels.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#include <cstdint>

#include "algo/kernels/scalar.h"

#define KF_AVX2 __attribute__((target("avx2,f16c")))
#define KF_AVX2_INLINE __attribute__((target("avx2,f16c"), always_inline)) inline

namespace kf {
namespace kernels {
namespace {

// ---------------------------------------------------------------------------
// Arithmetic on one register, by element type.

struct F32 {
  using V = __m256;
  static KF_AVX2_INLINE V load(const float* p) { return _mm256_loadu_ps(p); }
  static KF_AVX2_INLINE void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static KF_AVX2_INLINE V add(V a, V b) { return _mm256_add_ps(a, b); }
  static KF_AVX2_INLINE V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static KF_AVX2_INLINE V min(V a, V b) {
    return _mm256_blendv_ps(_mm256_min_ps(a, b), a, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
  }
  static KF_AVX2_INLINE V max(V a, V b) {
    return _mm256_blendv_ps(_mm256_max_ps(a, b), a, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
  }
  static KF_AVX2_INLINE V div(V a, int n) {
    return _mm256_div_ps(a, _mm256_set1_ps(static_cast<float>(n)));
  }
};

struct F64 {
  using V = __m256d;
  static KF_AVX2_INLINE V load(const double* p) { return _mm256_loadu_pd(p); }
  static KF_AVX2_INLINE void store(double* p, V v) { _mm256_storeu_pd(p, v); }
  static KF_AVX2_INLINE V add(V a, V b) { return _mm256_add_pd(a, b); }
  static KF_AVX2_INLINE V mul(V a, V b) { return _mm256_mul_pd(a, b); }
  static KF_AVX2_INLINE V min(V a, V b) {
    return _mm256_blendv_pd(_mm256_min_pd(a, b), a, _mm256_cmp_pd(a, a, _CMP_UNORD_Q));
  }
  static KF_AVX2_INLINE V max(V a, V b) {
    return _mm256_blendv_pd(_mm256_max_pd(a, b), a, _mm256_cmp_pd(a, a, _CMP_UNORD_Q));
  }
  static KF_AVX2_INLINE V div(V a, int n) {
    return _mm256_div_pd(a, _mm256_set1_pd(static_cast<double>(n)));
  }
};

// Unaligned loads and stores of any integer type.
struct IntV {
  using V = __m256i;
  static KF_AVX2_INLINE V load(const void* p) {
    return _mm256_loadu_si256(static_cast<const __m256i*>(p));
  }
  static KF_AVX2_INLINE void store(void* p, V v) {
    _mm256_storeu_si256(static_cast<__m256i*>(p), v);
  }
};

template <bool kSigned>
struct I8 : IntV {
  static KF_AVX2_INLINE V add(V a, V b) { return _mm256_add_epi8(a, b); }
  static KF_AVX2_INLINE V mul(V a, V b) {
    // The low byte of a 16-bit product depends only on the low bytes.
    const V even = _mm256_mullo_epi16(a, b);
    const V odd = _mm256_mullo_epi16(_mm256_srli_epi16(a, 8), _mm256_srli_epi16(b, 8));
    return _mm256_or_si256(_mm256_and_si256(even, _mm256_set1_epi16(0x00ff)),
                           _mm256_slli_epi16(odd, 8));
  }
  static KF_AVX2_INLINE V min(V a, V b) {
    return kSigned ? _mm256_min_epi8(a, b) : _mm256_min_epu8(a, b);
  }
  static KF_AVX2_INLINE V max(V a, V b) {
    return kSigned ? _mm256_max_epi8(a, b) : _mm256_max_epu8(a, b);
  }
};

template <bool kSigned>
struct I32 : IntV {
  static KF_AVX2_INLINE V add(V a, V b) { return _mm256_add_epi32(a, b); }
  static KF_AVX2_INLINE V mul(V a, V b) { return _mm256_mullo_epi32(a, b); }
  static KF_AVX2_INLINE V min(V a, V b) {
    return kSigned ? _mm256_min_epi32(a, b) : _mm256_min_epu32(a, b);
  }
  static KF_AVX2_INLINE V max(V a, V b) {
    return kSigned ? _mm256_max_epi32(a, b) : _mm256_max_epu32(a, b);
  }
};

template <bool kSigned>
struct I64 : IntV {
  static KF_AVX2_INLINE V add(V a, V b) { return _mm256_add_epi64(a, b); }
  static KF_AVX2_INLINE V mul(V a, V b) {
    // (ah 2^32 + al)(bh 2^32 + bl) mod 2^64 = al bl + ((ah bl + al bh) << 32).
    const V lo = _mm256_mul_epu32(a, b);
    const V c1 = _mm256_mul_epu32(_mm256_srli_epi64(a, 32), b);
    const V c2 = _mm256_mul_epu32(a, _mm256_srli_epi64(b, 32));
    return _mm256_add_epi64(lo, _mm256_slli_epi64(_mm256_add_epi64(c1, c2), 32));
  }
  // a > b, signed or unsigned (flipping the sign bit orders unsigned values
  // as signed ones).
  static KF_AVX2_INLINE V greater(V a, V b) {
    if (kSigned) return _mm256_cmpgt_epi64(a, b);
    const V flip = _mm256_set1_epi64x(static_cast<long long>(0x8000000000000000ull));
    return _mm256_cmpgt_epi64(_mm256_xor_si256(a, flip), _mm256_xor_si256(b, flip));
  }
  static KF_AVX2_INLINE V min(V a, V b) { return _mm256_blendv_epi8(a, b, greater(a, b)); }
  static KF_AVX2_INLINE V max(V a, V b) { return _mm256_blendv_epi8(a, b, greater(b, a)); }
};

// ---------------------------------------------------------------------------
// Loading and storing one register's worth of elements (unaligned), and the
// scalar element type (scalar.h) that handles the remainder.

template <class T, class A>
struct NativeIO {
  using Arith = A;
  using V = typename A::V;
  using Scalar = Native<T>;
  static constexpr size_t kLanes = 32 / sizeof(T);
  static KF_AVX2_INLINE V load(const T* p) { return A::load(p); }
  static KF_AVX2_INLINE void store(T* p, V v) { A::store(p, v); }
};

// float16: 8 elements widened to float32.
struct HalfIO {
  using Arith = F32;
  using V = __m256;
  using Scalar = Half;
  static constexpr size_t kLanes = 8;
  static KF_AVX2_INLINE V load(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static KF_AVX2_INLINE void store(uint16_t* p, V v) {
    const V sign = _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(INT32_MIN)));
    const V qnan = _mm256_or_ps(sign, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fc00000)));
    v = _mm256_blendv_ps(v, qnan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
};

// Two registers of float32 (16 elements), for bfloat16: its widening and
// narrowing are cheapest on a whole 256-bit register of bfloat16 values.
struct F32x2 {
  __m256 lo, hi;
};

struct F32Pair {
  using V = F32x2;
  static KF_AVX2_INLINE V add(V a, V b) { return {F32::add(a.lo, b.lo), F32::add(a.hi, b.hi)}; }
  static KF_AVX2_INLINE V mul(V a, V b) { return {F32::mul(a.lo, b.lo), F32::mul(a.hi, b.hi)}; }
  static KF_AVX2_INLINE V min(V a, V b) { return {F32::min(a.lo, b.lo), F32::min(a.hi, b.hi)}; }
  static KF_AVX2_INLINE V max(V a, V b) { return {F32::max(a.lo, b.lo), F32::max(a.hi, b.hi)}; }
  static KF_AVX2_INLINE V div(V a, int n) { return {F32::div(a.lo, n), F32::div(a.hi, n)}; }
};

// bfloat16: 16 elements widened to float32 (the top half of a float32). The
// widening unpacks within each 128-bit lane (elements 0-3 and 8-11 go to lo,
// 4-7 and 12-15 to hi) and the narrowing packs within each lane, which puts
// every element back in its place without a cross-lane shuffle.
struct BFloatIO {
  using Arith = F32Pair;
  using V = F32x2;
  using Scalar = BFloat;
  static constexpr size_t kLanes = 16;
  static KF_AVX2_INLINE V load(const uint16_t* p) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i zero = _mm256_setzero_si256();
    return {_mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, x)),
            _mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, x))};
  }
  // float_to_bf16 lane by lane: NaN -> (x >> 16) | 0x40, else
  // (x + 0x7fff + ((x >> 16) & 1)) >> 16 (round to nearest even). Every
  // result is below 2^16.
  static KF_AVX2_INLINE __m256i narrow(__m256 v) {
    const __m256i x = _mm256_castps_si256(v);
    const __m256i hi = _mm256_srli_epi32(x, 16);
    const __m256i odd = _mm256_and_si256(hi, _mm256_set1_epi32(1));
    const __m256i bias = _mm256_add_epi32(_mm256_set1_epi32(0x7fff), odd);
    const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(x, bias), 16);
    const __m256i nan = _mm256_or_si256(hi, _mm256_set1_epi32(0x40));
    return _mm256_blendv_epi8(rounded, nan, _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)));
  }
  static KF_AVX2_INLINE void store(uint16_t* p, V v) {
    // Lanes below 2^16: the saturating pack is a plain narrowing.
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                        _mm256_packus_epi32(narrow(v.lo), narrow(v.hi)));
  }
};

// ---------------------------------------------------------------------------
// The loops.

struct VSum {
  using ScalarOp = OpSum;
  template <class A>
  static KF_AVX2_INLINE typename A::V apply(typename A::V a, typename A::V b) {
    return A::add(a, b);
  }
};
struct VProd {
  using ScalarOp = OpProd;
  template <class A>
  static KF_AVX2_INLINE typename A::V apply(typename A::V a, typename A::V b) {
    return A::mul(a, b);
  }
};
struct VMin {
  using ScalarOp = OpMin;
  template <class A>
  static KF_AVX2_INLINE typename A::V apply(typename A::V a, typename A::V b) {
    return A::min(a, b);
  }
};
struct VMax {
  using ScalarOp = OpMax;
  template <class A>
  static KF_AVX2_INLINE typename A::V apply(typename A::V a, typename A::V b) {
    return A::max(a, b);
  }
};

// Four registers per iteration keep enough loads in flight; each element
// depends only on its own inputs, so exact aliasing of out with a or b is
// harmless.
template <class IO, class Op>
KF_AVX2 void combine(void* out, const void* a, const void* b, size_t n) {
  using S = typename IO::Scalar::Storage;
  using A = typename IO::Arith;
  constexpr size_t L = IO::kLanes;
  S* o = static_cast<S*>(out);
  const S* pa = static_cast<const S*>(a);
  const S* pb = static_cast<const S*>(b);
  size_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    const auto x0 = IO::load(pa + i), x1 = IO::load(pa + i + L);
    const auto x2 = IO::load(pa + i + 2 * L), x3 = IO::load(pa + i + 3 * L);
    const auto y0 = IO::load(pb + i), y1 = IO::load(pb + i + L);
    const auto y2 = IO::load(pb + i + 2 * L), y3 = IO::load(pb + i + 3 * L);
    IO::store(o + i, Op::template apply<A>(x0, y0));
    IO::store(o + i + L, Op::template apply<A>(x1, y1));
    IO::store(o + i + 2 * L, Op::template apply<A>(x2, y2));
    IO::store(o + i + 3 * L, Op::template apply<A>(x3, y3));
  }
  for (; i + L <= n; i += L)
    IO::store(o + i, Op::template apply<A>(IO::load(pa + i), IO::load(pb + i)));
  scalar_combine<typename IO::Scalar, typename Op::ScalarOp>(o + i, pa + i, pb + i, n - i);
}

template <class IO>
KF_AVX2 void divide_float(void* buf, size_t n, int nranks) {
  using S = typename IO::Scalar::Storage;
  constexpr size_t L = IO::kLanes;
  S* p = static_cast<S*>(buf);
  size_t i = 0;
  for (; i + L <= n; i += L) IO::store(p + i, IO::Arith::div(IO::load(p + i), nranks));
  scalar_divide<typename IO::Scalar>(p + i, n - i, nranks);
}

template <class E>
void divide_scalar(void* buf, size_t n, int nranks) {
  scalar_divide<E>(static_cast<typename E::Storage*>(buf), n, nranks);
}

template <class IO>
void fill(KernelTable& t, kf_dtype_t d, DivideFn divide) {
  t.combine[d][KF_SUM] = &combine<IO, VSum>;
  t.combine[d][KF_PROD] = &combine<IO, VProd>;
  t.combine[d][KF_MIN] = &combine<IO, VMin>;
  t.combine[d][KF_MAX] = &combine<IO, VMax>;
  t.combine[d][KF_AVG] = &combine<IO, VSum>;
  t.divide[d] = divide;
}

KernelTable make_table() {
  KernelTable t{};
  t.isa = KernelIsa::kAvx2;
  fill<NativeIO<int8_t, I8<true>>>(t, KF_INT8, &divide_scalar<Native<int8_t>>);
  fill<NativeIO<uint8_t, I8<false>>>(t, KF_UINT8, &divide_scalar<Native<uint8_t>>);
  fill<NativeIO<int32_t, I32<true>>>(t, KF_INT32, &divide_scalar<Native<int32_t>>);
  fill<NativeIO<uint32_t, I32<false>>>(t, KF_UINT32, &divide_scalar<Native<uint32_t>>);
  fill<NativeIO<int64_t, I64<true>>>(t, KF_INT64, &divide_scalar<Native<int64_t>>);
  fill<NativeIO<uint64_t, I64<false>>>(t, KF_UINT64, &divide_scalar<Native<uint64_t>>);
  fill<HalfIO>(t, KF_FLOAT16, &divide_float<HalfIO>);
  fill<BFloatIO>(t, KF_BFLOAT16, &divide_float<BFloatIO>);
  fill<NativeIO<float, F32>>(t, KF_FLOAT32, &divide_float<NativeIO<float, F32>>);
  fill<NativeIO<double, F64>>(t, KF_FLOAT64, &divide_float<NativeIO<double, F64>>);
  return t;
}

}  // namespace

const KernelTable* avx2_table() {
  static const KernelTable table = make_table();
  return &table;
}

}  // namespace kernels
}  // namespace kf

#else  // not x86

namespace kf {
namespace kernels {
const KernelTable* avx2_table() {
  return nullptr;
}
}  // namespace kernels
}  // namespace kf

#endif
