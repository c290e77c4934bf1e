// The per-element semantics of every reduction, shared by all kernel sets:
// the baseline loops are built from them, and the SIMD kernels use them for
// the elements left over after the last full vector. A SIMD kernel must give
// the same bits as these functions for every input (tests/algo checks it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "algo/half.h"

namespace kf {
namespace kernels {

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
// which is what a training job wants to see. When neither is NaN and they
// compare equal (+0 and -0), the second operand is returned; when the first
// is NaN, it is returned.
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

// out[i] = a[i] op b[i], one element at a time; any of the three pointers
// may be equal (exact aliasing only). Used for SIMD remainders.
template <class E, class Op>
void scalar_combine(typename E::Storage* out, const typename E::Storage* a,
                    const typename E::Storage* b, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = E::store(Op::apply(E::load(a[i]), E::load(b[i])));
}

// buf[i] /= nranks. C++ integer division truncates toward zero, as
// documented for KF_AVG; dividing in int64_t / uint64_t avoids promoting a
// negative int8 against an unsigned divisor.
template <class E>
void scalar_divide(typename E::Storage* p, size_t n, int nranks) {
  using S = typename E::Storage;
  using C = typename E::Compute;
  if constexpr (std::is_integral_v<C>) {
    using W = std::conditional_t<std::is_signed_v<C>, int64_t, uint64_t>;
    const W d = static_cast<W>(nranks);
    for (size_t i = 0; i < n; ++i) p[i] = static_cast<S>(static_cast<W>(p[i]) / d);
  } else {
    const C d = static_cast<C>(nranks);
    for (size_t i = 0; i < n; ++i) p[i] = E::store(E::load(p[i]) / d);
  }
}

}  // namespace kernels
}  // namespace kf
