// Element-wise reduction kernels. Each (dtype, op) pair gets its own plain
// loop over restrict-qualified pointers so that the compiler vectorizes it;
// the dispatch on dtype and op happens once per call, never per element.

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
#include "algo/reduce_kernels.h"

#include <cstdint>
#include <type_traits>

#include "algo/half.h"

namespace kf {
namespace {

// How an element is stored and in which type it is combined. Native types
// combine as themselves; the 16-bit floats are widened to float32.
template <class T>
struct Native {
  using Storage = T;
  using Compute = T;
  static Compute load(Storage v) { return v; }
  static Storage store(Compute v) { return v; }
};

struct Half {
  using Storage = uint16_t;
  using Compute = float;
  static Compute load(Storage v) { return half_to_float(v); }
  static Storage store(Compute v) { return float_to_half(v); }
};

struct BFloat {
  using Storage = uint16_t;
  using Compute = float;
  static Compute load(Storage v) { return bf16_to_float(v); }
  static Storage store(Compute v) { return float_to_bf16(v); }
};

// Integer sum and product are computed in the unsigned type of the same
// width, where overflow is defined to wrap; converting back is modular
// (guaranteed by GCC and Clang, and by C++20).
template <class T>
T wrap_add(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}

template <class T>
T wrap_mul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    // Types narrower than int promote to int; their product still fits an int
    // (255 * 255), so only int-sized and wider types need the unsigned trick,
    // and for those unsigned arithmetic does not promote.
    using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    return a * b;
  }
}

// min and max propagate NaN (a NaN in any rank's data shows in the result),
// which is what a training job wants to see.
template <class T>
T nan_min(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return (a < b || a != a) ? a : b;
  } else {
    return a < b ? a : b;
  }
}

template <class T>
T nan_max(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return (a > b || a != a) ? a : b;
  } else {
    return a > b ? a : b;
  }
}

struct OpSum {
  template <class T>
  static T apply(T a, T b) {
    return wrap_add(a, b);
  }
};
struct OpProd {
  template <class T>
  static T apply(T a, T b) {
    return wrap_mul(a, b);
  }
};
struct OpMin {
  template <class T>
  static T apply(T a, T b) {
    return nan_min(a, b);
  }
};
struct OpMax {
  template <class T>
  static T apply(T a, T b) {
    return nan_max(a, b);
  }
};

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
void combine_op(kf_op_t op, void* out, const void* a, const void* b, size_t n) {
  switch (op) {
    case KF_SUM:
    case KF_AVG:
      combine<E, OpSum>(out, a, b, n);
      return;
    case KF_PROD:
      combine<E, OpProd>(out, a, b, n);
      return;
    case KF_MIN:
      combine<E, OpMin>(out, a, b, n);
      return;
    case KF_MAX:
      combine<E, OpMax>(out, a, b, n);
      return;
    case KF_OP_COUNT:
      return;
  }
}

template <class E>
void divide(void* buf, size_t n, int nranks) {
  using S = typename E::Storage;
  using C = typename E::Compute;
  S* __restrict p = static_cast<S*>(buf);
  if constexpr (std::is_integral_v<C>) {
    // C++ integer division truncates toward zero, as documented for KF_AVG.
    // Dividing in int64_t / uint64_t avoids promoting a negative int8 against
    // an unsigned divisor.
    using W = std::conditional_t<std::is_signed_v<C>, int64_t, uint64_t>;
    const W d = static_cast<W>(nranks);
    for (size_t i = 0; i < n; ++i) p[i] = static_cast<S>(static_cast<W>(p[i]) / d);
  } else {
    const C d = static_cast<C>(nranks);
    for (size_t i = 0; i < n; ++i) p[i] = E::store(E::load(p[i]) / d);
  }
}

}  // namespace

void reduce_to(kf_dtype_t dtype, kf_op_t op, void* out, const void* a, const void* b,
               size_t count) {
  if (count == 0) return;
  switch (dtype) {
    case KF_INT8:
      return combine_op<Native<int8_t>>(op, out, a, b, count);
    case KF_UINT8:
      return combine_op<Native<uint8_t>>(op, out, a, b, count);
    case KF_INT32:
      return combine_op<Native<int32_t>>(op, out, a, b, count);
    case KF_UINT32:
      return combine_op<Native<uint32_t>>(op, out, a, b, count);
    case KF_INT64:
      return combine_op<Native<int64_t>>(op, out, a, b, count);
    case KF_UINT64:
      return combine_op<Native<uint64_t>>(op, out, a, b, count);
    case KF_FLOAT16:
      return combine_op<Half>(op, out, a, b, count);
    case KF_BFLOAT16:
      return combine_op<BFloat>(op, out, a, b, count);
    case KF_FLOAT32:
      return combine_op<Native<float>>(op, out, a, b, count);
    case KF_FLOAT64:
      return combine_op<Native<double>>(op, out, a, b, count);
    case KF_DTYPE_COUNT:
      return;
  }
}

void reduce_into(kf_dtype_t dtype, kf_op_t op, void* inout, const void* in, size_t count) {
  reduce_to(dtype, op, inout, inout, in, count);
}

void finish_average(kf_dtype_t dtype, void* buf, size_t count, int nranks) {
  if (count == 0 || nranks <= 1) return;
  switch (dtype) {
    case KF_INT8:
      return divide<Native<int8_t>>(buf, count, nranks);
    case KF_UINT8:
      return divide<Native<uint8_t>>(buf, count, nranks);
    case KF_INT32:
      return divide<Native<int32_t>>(buf, count, nranks);
    case KF_UINT32:
      return divide<Native<uint32_t>>(buf, count, nranks);
    case KF_INT64:
      return divide<Native<int64_t>>(buf, count, nranks);
    case KF_UINT64:
      return divide<Native<uint64_t>>(buf, count, nranks);
    case KF_FLOAT16:
      return divide<Half>(buf, count, nranks);
    case KF_BFLOAT16:
      return divide<BFloat>(buf, count, nranks);
    case KF_FLOAT32:
      return divide<Native<float>>(buf, count, nranks);
    case KF_FLOAT64:
      return divide<Native<double>>(buf, count, nranks);
    case KF_DTYPE_COUNT:
      return;
  }
}

}  // namespace kf
