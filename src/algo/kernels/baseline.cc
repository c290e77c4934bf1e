// The baseline kernels: one plain loop per (dtype, op) over restrict-qualified
// pointers, vectorized by the compiler for the build's target (SSE2 on
// x86-64), so they run on every CPU the library runs on.

// Compiler settings for this file only (placed before any include so that
// the inline conversions of half.h are compiled, and inlined, with them):
// - GCC 12 at -O2 (our release flags) vectorizes only loops that need no
//   remainder or alias check, which rules out every loop here; the dynamic
//   cost model vectorizes them as -O3 would.
// - Without trapping math GCC may compute both sides of the branch-free
//   float16 conversions for every lane. That changes no result, only which
//   floating-point exception flags may be raised, which nothing here reads.
// Clang vectorizes these loops at -O2 anyway.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic", "no-trapping-math")
#endif
#include <cstdint>

#include "algo/kernels/kernels.h"
#include "algo/kernels/scalar.h"

namespace kf {
namespace kernels {
namespace {

// out[i] = a[i] op b[i] with three distinct buffers.
template <class E, class Op>
void loop3(typename E::Storage* __restrict out, const typename E::Storage* __restrict a,
           const typename E::Storage* __restrict b, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = E::store(Op::apply(E::load(a[i]), E::load(b[i])));
}

// io[i] = io[i] op in[i] (kReversed: in[i] op io[i]); the order matters only
// for min/max of signed zeros and NaN payloads, but it keeps the documented
// operand order exact.
template <class E, class Op, bool kReversed>
void loop2(typename E::Storage* __restrict io, const typename E::Storage* __restrict in, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const auto x = E::load(io[i]);
    const auto y = E::load(in[i]);
    io[i] = E::store(kReversed ? Op::apply(y, x) : Op::apply(x, y));
  }
}

// io[i] = io[i] op io[i].
template <class E, class Op>
void loop1(typename E::Storage* io, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const auto x = E::load(io[i]);
    io[i] = E::store(Op::apply(x, x));
  }
}

template <class E, class Op>
void combine(void* out, const void* a, const void* b, size_t n) {
  using S = typename E::Storage;
  S* o = static_cast<S*>(out);
  const S* pa = static_cast<const S*>(a);
  const S* pb = static_cast<const S*>(b);
  if (o == pa && o == pb) {
    loop1<E, Op>(o, n);
  } else if (o == pa) {
    loop2<E, Op, false>(o, pb, n);
  } else if (o == pb) {
    loop2<E, Op, true>(o, pa, n);
  } else {
    loop3<E, Op>(o, pa, pb, n);
  }
}

template <class E>
void divide(void* buf, size_t n, int nranks) {
  scalar_divide<E>(static_cast<typename E::Storage*>(buf), n, nranks);
}

template <class E>
void fill(KernelTable& t, kf_dtype_t d) {
  t.combine[d][KF_SUM] = &combine<E, OpSum>;
  t.combine[d][KF_PROD] = &combine<E, OpProd>;
  t.combine[d][KF_MIN] = &combine<E, OpMin>;
  t.combine[d][KF_MAX] = &combine<E, OpMax>;
  t.combine[d][KF_AVG] = &combine<E, OpSum>;
  t.divide[d] = &divide<E>;
}

KernelTable make_table() {
  KernelTable t{};
  t.isa = KernelIsa::kBaseline;
  fill<Native<int8_t>>(t, KF_INT8);
  fill<Native<uint8_t>>(t, KF_UINT8);
  fill<Native<int32_t>>(t, KF_INT32);
  fill<Native<uint32_t>>(t, KF_UINT32);
  fill<Native<int64_t>>(t, KF_INT64);
  fill<Native<uint64_t>>(t, KF_UINT64);
  fill<Half>(t, KF_FLOAT16);
  fill<BFloat>(t, KF_BFLOAT16);
  fill<Native<float>>(t, KF_FLOAT32);
  fill<Native<double>>(t, KF_FLOAT64);
  return t;
}

}  // namespace

const KernelTable& baseline_table() {
  static const KernelTable table = make_table();
  return table;
}

}  // namespace kernels
}  // namespace kf
