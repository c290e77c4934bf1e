// Conversions between float32 and the two 16-bit float formats, written with
// integer operations only so they behave the same on every CPU and compiler
// (no F16C or _Float16 needed). Narrowing rounds to nearest, ties to even,
// keeps NaN a NaN (quiet) and Inf an Inf, and produces subnormals exactly.
#pragma once

#include <cstdint>
#include <cstring>

namespace kf {

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Both half conversions are branch-free (every case is computed and one is
// selected), so that the reduction loops that call them vectorize; the
// tricks are F. Giesen's (public domain "half.h" gist).

// IEEE 754 binary16 -> float32. Exact: every half value is a float value.
inline float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t shifted = static_cast<uint32_t>(h & 0x7fffu) << 13;  // exponent + mantissa
  const uint32_t exp = shifted & 0x0f800000u;
  // Rebias the exponent (15 -> 127); Inf and NaN need the maximum exponent.
  const uint32_t normal = shifted + 0x38000000u;
  const uint32_t special = normal + 0x38000000u;
  // Subnormal or zero: build 2^-14 * (1 + m/1024) and subtract 2^-14, which
  // leaves m * 2^-24 exactly.
  const float sub = bits_float(normal + 0x00800000u) - bits_float(0x38800000u);
  const uint32_t mag = exp == 0 ? float_bits(sub) : exp == 0x0f800000u ? special : normal;
  return bits_float(mag | sign);
}

// float32 -> IEEE 754 binary16, round to nearest even. NaN becomes the quiet
// NaN 0x7e00 (with its sign); overflow becomes Inf.
inline uint16_t float_to_half(float f) {
  const uint32_t x = float_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t a = x & 0x7fffffffu;
  // |f| >= 2^16 (or Inf/NaN): no half is nearer than Inf.
  const uint32_t big = a > 0x7f800000u ? 0x7e00u : 0x7c00u;
  // Below 2^-14 the result is subnormal or zero: adding 0.5 puts the half
  // mantissa in the low float bits, and the float addition does the round to
  // nearest even (under the default rounding mode; an input flushed to zero
  // by DAZ would round to zero anyway).
  const uint32_t small = float_bits(bits_float(a) + 0.5f) - 0x3f000000u;
  // Normal: rebias 127 -> 15, add the rounding bias (half an ulp minus one,
  // plus one if the kept mantissa is odd: ties to even) and drop 13 bits. A
  // carry correctly bumps the exponent, up to Inf.
  const uint32_t odd = (a >> 13) & 1u;
  const uint32_t normal = (a - 0x38000000u + 0xfffu + odd) >> 13;
  const uint32_t mag = a >= 0x47800000u ? big : a < 0x38800000u ? small : normal;
  return static_cast<uint16_t>(mag | sign);
}

// bfloat16 -> float32: bfloat16 is the top half of a float32.
inline float bf16_to_float(uint16_t b) {
  return bits_float(static_cast<uint32_t>(b) << 16);
}

// float32 -> bfloat16, round to nearest even. Overflow rounds to Inf, which
// is the correct IEEE result; NaN is kept quiet.
inline uint16_t float_to_bf16(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

}  // namespace kf
