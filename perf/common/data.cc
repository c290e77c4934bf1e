#include "data.h"

#include <cmath>
#include <cstring>
#include <type_traits>

namespace kft {

namespace {

const char* const kDtypeNames[KF_DTYPE_COUNT] = {"int8",   "uint8", "int32",    "uint32", "int64",
                                                 "uint64", "half",  "bfloat16", "float",  "double"};
const char* const kOpNames[KF_OP_COUNT] = {"sum", "prod", "min", "max", "avg"};

uint64_t mix(uint64_t x) {
  // splitmix64 finaliser: cheap, and good enough that neighbouring ranks and
  // indices get unrelated values (so misplaced blocks are caught).
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The input values (see input_value in data.h), with the per-call choices
// made once so the per-element work is one hash.
class Gen {
 public:
  Gen(Kind kind, kf_dtype_t t, kf_op_t op, uint32_t salt)
      : move_(kind == Kind::kMove),
        prod_(kind == Kind::kReduce && op == KF_PROD),
        sgn_(dtype_is_signed(t)),
        salt_key_((static_cast<uint64_t>(salt) << 52) ^
                  (static_cast<uint64_t>(salt) * 0x2545F4914F6CDD1Dull)) {}
  int64_t operator()(int rank, uint64_t index) const {
    const uint64_t h = mix(index ^ (static_cast<uint64_t>(rank) << 40) ^ salt_key_);
    if (move_) return sgn_ ? static_cast<int64_t>(h % 201) - 100 : static_cast<int64_t>(h % 251);
    if (prod_) {
      static const int64_t kSigned[4] = {1, 2, 1, -1};
      static const int64_t kUnsigned[4] = {1, 2, 1, 1};
      return sgn_ ? kSigned[h & 3] : kUnsigned[h & 3];
    }
    return sgn_ ? static_cast<int64_t>(h % 7) - 3 : static_cast<int64_t>(h % 7);
  }

 private:
  bool move_, prod_, sgn_;
  uint64_t salt_key_;
};

template <typename T>
T load(const void* buf, uint64_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(buf) + i * sizeof(T), sizeof(T));
  return v;
}

template <typename T>
void store(void* buf, uint64_t i, T v) {
  std::memcpy(static_cast<char*>(buf) + i * sizeof(T), &v, sizeof(T));
}

// Stores an integer-valued double (or an average) as dtype t.
void store_float(void* buf, uint64_t i, kf_dtype_t t, double v) {
  switch (t) {
    case KF_FLOAT16:
      store<uint16_t>(buf, i, float_to_half(static_cast<float>(v)));
      break;
    case KF_BFLOAT16:
      store<uint16_t>(buf, i, float_to_bf16(static_cast<float>(v)));
      break;
    case KF_FLOAT32:
      store<float>(buf, i, static_cast<float>(v));
      break;
    default:
      store<double>(buf, i, v);
      break;
  }
}

template <typename T>
void fill_int(void* buf, uint64_t count, kf_dtype_t t, Kind kind, kf_op_t op, int rank,
              uint64_t first, uint32_t salt) {
  T* p = static_cast<T*>(buf);
  const Gen gen(kind, t, op, salt);
  for (uint64_t i = 0; i < count; ++i) p[i] = static_cast<T>(gen(rank, first + i));
}

template <typename T>
void fill_float(void* buf, uint64_t count, const Gen& gen, int rank, uint64_t first) {
  T* p = static_cast<T*>(buf);
  for (uint64_t i = 0; i < count; ++i) p[i] = static_cast<T>(gen(rank, first + i));
}

template <typename T>
void expected_int(void* out, uint64_t count, kf_dtype_t t, kf_op_t op, int nranks, uint64_t first,
                  uint32_t salt) {
  // Unsigned arithmetic gives the two's complement wraparound the API specifies
  // without signed-overflow undefined behaviour.
  using U = std::make_unsigned_t<T>;
  T* p = static_cast<T*>(out);
  const Gen gen(Kind::kReduce, t, op, salt);
  for (uint64_t i = 0; i < count; ++i) {
    U acc = static_cast<U>(static_cast<T>(gen(0, first + i)));
    for (int r = 1; r < nranks; ++r) {
      U v = static_cast<U>(static_cast<T>(gen(r, first + i)));
      switch (op) {
        case KF_SUM:
        case KF_AVG:
          acc = static_cast<U>(acc + v);
          break;
        case KF_PROD:
          acc = static_cast<U>(static_cast<uint64_t>(acc) * static_cast<uint64_t>(v));
          break;
        case KF_MIN:
          if (static_cast<T>(v) < static_cast<T>(acc)) acc = v;
          break;
        case KF_MAX:
          if (static_cast<T>(v) > static_cast<T>(acc)) acc = v;
          break;
        default:
          break;
      }
    }
    T res = static_cast<T>(acc);
    if (op == KF_AVG) res = static_cast<T>(res / static_cast<T>(nranks));  // truncates toward zero
    p[i] = res;
  }
}

template <typename T>
uint64_t wrong_exact(const void* got, const void* exp, uint64_t count, uint64_t* first_bad) {
  const T* g = static_cast<const T*>(got);
  const T* e = static_cast<const T*>(exp);
  uint64_t wrong = 0;
  for (uint64_t i = 0; i < count; ++i) {
    if (std::memcmp(&g[i], &e[i], sizeof(T)) != 0) {
      if (wrong == 0 && first_bad) *first_bad = i;
      ++wrong;
    }
  }
  return wrong;
}

}  // namespace

size_t element_size(kf_dtype_t t) {
  static const size_t kSizes[KF_DTYPE_COUNT] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};
  return (t >= 0 && t < KF_DTYPE_COUNT) ? kSizes[t] : 0;
}

const char* dtype_name(kf_dtype_t t) {
  return (t >= 0 && t < KF_DTYPE_COUNT) ? kDtypeNames[t] : "?";
}

const char* op_name(kf_op_t op) {
  return (op >= 0 && op < KF_OP_COUNT) ? kOpNames[op] : "?";
}

bool parse_dtype(const char* s, kf_dtype_t* out) {
  static const struct {
    const char* name;
    kf_dtype_t t;
  } table[] = {{"int8", KF_INT8},         {"uint8", KF_UINT8},    {"int32", KF_INT32},
               {"int", KF_INT32},         {"uint32", KF_UINT32},  {"int64", KF_INT64},
               {"uint64", KF_UINT64},     {"half", KF_FLOAT16},   {"float16", KF_FLOAT16},
               {"bfloat16", KF_BFLOAT16}, {"bf16", KF_BFLOAT16},  {"float", KF_FLOAT32},
               {"float32", KF_FLOAT32},   {"double", KF_FLOAT64}, {"float64", KF_FLOAT64}};
  for (const auto& e : table) {
    if (std::strcmp(s, e.name) == 0) {
      *out = e.t;
      return true;
    }
  }
  return false;
}

bool parse_op(const char* s, kf_op_t* out) {
  for (int i = 0; i < KF_OP_COUNT; ++i) {
    if (std::strcmp(s, kOpNames[i]) == 0) {
      *out = static_cast<kf_op_t>(i);
      return true;
    }
  }
  return false;
}

bool dtype_is_float(kf_dtype_t t) {
  return t >= KF_FLOAT16;
}

bool dtype_is_signed(kf_dtype_t t) {
  return t == KF_INT8 || t == KF_INT32 || t == KF_INT64 || dtype_is_float(t);
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u)
    return static_cast<uint16_t>(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0u));
  if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to infinity
  if (ax < 0x38800000u) {  // half subnormal (or zero): units of 2^-24
    float a;
    std::memcpy(&a, &ax, 4);
    const uint32_t m = static_cast<uint32_t>(std::nearbyint(a * 16777216.0f));
    return static_cast<uint16_t>(sign | m);
  }
  uint32_t h = (((ax >> 23) - 127u + 15u) << 10) | ((ax & 0x7fffffu) >> 13);
  const uint32_t rem = ax & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // carry may bump the exponent: correct
  return static_cast<uint16_t>(sign | h);
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31)
    bits = sign | 0x7f800000u | (mant << 13);
  else
    bits = sign | ((exp - 15u + 127u) << 23) | (mant << 13);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_bf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

float bf16_to_float(uint16_t b) {
  const uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

int64_t input_value(Kind kind, kf_dtype_t t, kf_op_t op, int rank, uint64_t index, uint32_t salt) {
  return Gen(kind, t, op, salt)(rank, index);
}

void fill_input(void* buf, uint64_t count, kf_dtype_t t, Kind kind, kf_op_t op, int rank,
                uint64_t first, uint32_t salt) {
  switch (t) {
    case KF_INT8:
      fill_int<int8_t>(buf, count, t, kind, op, rank, first, salt);
      return;
    case KF_UINT8:
      fill_int<uint8_t>(buf, count, t, kind, op, rank, first, salt);
      return;
    case KF_INT32:
      fill_int<int32_t>(buf, count, t, kind, op, rank, first, salt);
      return;
    case KF_UINT32:
      fill_int<uint32_t>(buf, count, t, kind, op, rank, first, salt);
      return;
    case KF_INT64:
      fill_int<int64_t>(buf, count, t, kind, op, rank, first, salt);
      return;
    case KF_UINT64:
      fill_int<uint64_t>(buf, count, t, kind, op, rank, first, salt);
      return;
    case KF_FLOAT32:
      fill_float<float>(buf, count, Gen(kind, t, op, salt), rank, first);
      return;
    case KF_FLOAT64:
      fill_float<double>(buf, count, Gen(kind, t, op, salt), rank, first);
      return;
    default:
      break;
  }
  const Gen gen(kind, t, op, salt);
  for (uint64_t i = 0; i < count; ++i)
    store_float(buf, i, t, static_cast<double>(gen(rank, first + i)));
}

void fill_expected_reduce(void* out, uint64_t count, kf_dtype_t t, kf_op_t op, int nranks,
                          uint64_t first, uint32_t salt) {
  switch (t) {
    case KF_INT8:
      expected_int<int8_t>(out, count, t, op, nranks, first, salt);
      return;
    case KF_UINT8:
      expected_int<uint8_t>(out, count, t, op, nranks, first, salt);
      return;
    case KF_INT32:
      expected_int<int32_t>(out, count, t, op, nranks, first, salt);
      return;
    case KF_UINT32:
      expected_int<uint32_t>(out, count, t, op, nranks, first, salt);
      return;
    case KF_INT64:
      expected_int<int64_t>(out, count, t, op, nranks, first, salt);
      return;
    case KF_UINT64:
      expected_int<uint64_t>(out, count, t, op, nranks, first, salt);
      return;
    default:
      break;
  }
  // Inputs are small integers, so sums, products (|p| <= 2^nranks), min and max
  // are exact in double and in every float type up to 8 ranks.
  const Gen gen(Kind::kReduce, t, op, salt);
  for (uint64_t i = 0; i < count; ++i) {
    double acc = static_cast<double>(gen(0, first + i));
    for (int r = 1; r < nranks; ++r) {
      const double v = static_cast<double>(gen(r, first + i));
      switch (op) {
        case KF_SUM:
        case KF_AVG:
          acc += v;
          break;
        case KF_PROD:
          acc *= v;
          break;
        case KF_MIN:
          acc = v < acc ? v : acc;
          break;
        case KF_MAX:
          acc = v > acc ? v : acc;
          break;
        default:
          break;
      }
    }
    if (op == KF_AVG) acc /= nranks;
    store_float(out, i, t, acc);
  }
}

double avg_tolerance(kf_dtype_t t) {
  switch (t) {
    case KF_FLOAT16:
    case KF_BFLOAT16:
      return 1e-2;
    case KF_FLOAT32:
      return 1e-6;
    case KF_FLOAT64:
      return 1e-12;
    default:
      return 0.0;
  }
}

double element_as_double(const void* buf, uint64_t i, kf_dtype_t t) {
  switch (t) {
    case KF_INT8:
      return load<int8_t>(buf, i);
    case KF_UINT8:
      return load<uint8_t>(buf, i);
    case KF_INT32:
      return load<int32_t>(buf, i);
    case KF_UINT32:
      return load<uint32_t>(buf, i);
    case KF_INT64:
      return static_cast<double>(load<int64_t>(buf, i));
    case KF_UINT64:
      return static_cast<double>(load<uint64_t>(buf, i));
    case KF_FLOAT16:
      return half_to_float(load<uint16_t>(buf, i));
    case KF_BFLOAT16:
      return bf16_to_float(load<uint16_t>(buf, i));
    case KF_FLOAT32:
      return load<float>(buf, i);
    case KF_FLOAT64:
      return load<double>(buf, i);
    default:
      return 0.0;
  }
}

uint64_t count_wrong(const void* got, const void* expected, uint64_t count, kf_dtype_t t,
                     kf_op_t op, uint64_t* first_bad) {
  if (first_bad) *first_bad = UINT64_MAX;
  // Fast path: bitwise equal means equal (expected values are never NaN).
  if (count == 0 || std::memcmp(got, expected, count * element_size(t)) == 0) return 0;
  if (!dtype_is_float(t)) {
    switch (element_size(t)) {
      case 1:
        return wrong_exact<uint8_t>(got, expected, count, first_bad);
      case 4:
        return wrong_exact<uint32_t>(got, expected, count, first_bad);
      default:
        return wrong_exact<uint64_t>(got, expected, count, first_bad);
    }
  }
  // Floats compare by value (so +0 == -0); only KF_AVG is inexact.
  const double tol = op == KF_AVG ? avg_tolerance(t) : 0.0;
  uint64_t wrong = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const double g = element_as_double(got, i, t);
    const double e = element_as_double(expected, i, t);
    const double scale = std::fabs(e) > 1.0 ? std::fabs(e) : 1.0;
    if (!(std::fabs(g - e) <= tol * scale)) {
      if (wrong == 0 && first_bad) *first_bad = i;
      ++wrong;
    }
  }
  return wrong;
}

}  // namespace kft
