#include "test_data.h"

#include <cmath>
#include <cstring>

#include "algo/half.h"

namespace kf {
namespace test {

bool is_float(kf_dtype_t t) {
  return t == KF_FLOAT16 || t == KF_BFLOAT16 || t == KF_FLOAT32 || t == KF_FLOAT64;
}

bool is_signed_int(kf_dtype_t t) {
  return t == KF_INT8 || t == KF_INT32 || t == KF_INT64;
}

namespace {

uint64_t norm(kf_dtype_t t, uint64_t v) {
  const size_t bits = esize(t) * 8;
  if (bits == 64) return v;
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  v &= mask;
  if (is_signed_int(t) && (v >> (bits - 1)) != 0) v |= ~mask;
  return v;
}

bool less(kf_dtype_t t, uint64_t a, uint64_t b) {
  if (is_signed_int(t)) return static_cast<int64_t>(a) < static_cast<int64_t>(b);
  return a < b;
}

uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

}  // namespace

Value get(kf_dtype_t t, const void* buf, size_t idx) {
  const char* p = static_cast<const char*>(buf) + idx * esize(t);
  Value v;
  switch (t) {
    case KF_FLOAT16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      v.f = half_to_float(h);
      break;
    }
    case KF_BFLOAT16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      v.f = bf16_to_float(h);
      break;
    }
    case KF_FLOAT32: {
      float f;
      std::memcpy(&f, p, 4);
      v.f = f;
      break;
    }
    case KF_FLOAT64:
      std::memcpy(&v.f, p, 8);
      break;
    default: {
      uint64_t raw = 0;
      std::memcpy(&raw, p, esize(t));  // little-endian
      v.i = norm(t, raw);
    }
  }
  return v;
}

void set(kf_dtype_t t, void* buf, size_t idx, Value v) {
  char* p = static_cast<char*>(buf) + idx * esize(t);
  switch (t) {
    case KF_FLOAT16: {
      uint16_t h = float_to_half(static_cast<float>(v.f));
      std::memcpy(p, &h, 2);
      break;
    }
    case KF_BFLOAT16: {
      uint16_t h = float_to_bf16(static_cast<float>(v.f));
      std::memcpy(p, &h, 2);
      break;
    }
    case KF_FLOAT32: {
      float f = static_cast<float>(v.f);
      std::memcpy(p, &f, 4);
      break;
    }
    case KF_FLOAT64:
      std::memcpy(p, &v.f, 8);
      break;
    default:
      std::memcpy(p, &v.i, esize(t));
  }
}

Value ref_combine(kf_dtype_t t, kf_op_t op, Value a, Value b) {
  Value r;
  if (is_float(t)) {
    switch (op) {
      case KF_SUM:
      case KF_AVG:
        r.f = a.f + b.f;
        break;
      case KF_PROD:
        r.f = a.f * b.f;
        break;
      case KF_MIN:
        r.f = std::fmin(a.f, b.f);
        break;
      case KF_MAX:
        r.f = std::fmax(a.f, b.f);
        break;
      default:
        break;
    }
    return r;
  }
  switch (op) {
    case KF_SUM:
    case KF_AVG:
      r.i = norm(t, a.i + b.i);
      break;
    case KF_PROD:
      r.i = norm(t, a.i * b.i);
      break;
    case KF_MIN:
      r.i = less(t, b.i, a.i) ? b.i : a.i;
      break;
    case KF_MAX:
      r.i = less(t, a.i, b.i) ? b.i : a.i;
      break;
    default:
      break;
  }
  return r;
}

Value ref_average(kf_dtype_t t, Value sum, int n) {
  Value r;
  if (is_float(t)) {
    r.f = sum.f / n;
  } else if (is_signed_int(t)) {
    r.i = norm(t, static_cast<uint64_t>(static_cast<int64_t>(sum.i) / n));
  } else {
    r.i = sum.i / static_cast<uint64_t>(n);
  }
  return r;
}

Value input_value(kf_dtype_t t, kf_op_t op, int rank, size_t idx) {
  const uint64_t h = mix((static_cast<uint64_t>(rank) << 40) ^ (idx * 0x9e3779b97f4a7c15ULL) ^
                         static_cast<uint64_t>(t) ^ (static_cast<uint64_t>(op) << 8));
  Value v;
  if (!is_float(t)) {
    v.i = norm(t, h);
    return v;
  }
  if (op == KF_PROD) {
    // Products of up to 8 values in {+-1, +-2} stay powers of two <= 256.
    static const double choices[] = {1, 2, -1, -2, 1, 1, 1, -1};
    v.f = choices[h % 8];
  } else {
    static const double choices[] = {1, 2, 3, -1, -2, -3, 0.5, 0};
    v.f = choices[h % 8];
  }
  return v;
}

bool same(kf_dtype_t t, Value got, Value want, bool approx) {
  if (!is_float(t)) return got.i == want.i;
  if (!approx) return got.f == want.f;
  const double tol = t == KF_FLOAT16    ? 1e-3
                     : t == KF_BFLOAT16 ? 8e-3
                     : t == KF_FLOAT32  ? 1e-6
                                        : 1e-12;
  return std::fabs(got.f - want.f) <= tol * std::fmax(1.0, std::fabs(want.f));
}

std::string value_text(kf_dtype_t t, Value v) {
  if (is_float(t)) return std::to_string(v.f);
  if (is_signed_int(t)) return std::to_string(static_cast<int64_t>(v.i));
  return std::to_string(v.i);
}

}  // namespace test
}  // namespace kf
