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

// IEEE 754 binary16 -> float32. Exact: every half value is a float value.
inline float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24, exact in float because mant < 2^10.
    const float mag = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return bits_float(float_bits(mag) | sign);
  }
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (mant << 13));  // Inf, NaN
  return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

// float32 -> IEEE 754 binary16, round to nearest even.
inline uint16_t float_to_half(float f) {
  const uint32_t x = float_bits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t a = x & 0x7fffffffu;
  if (a >= 0x7f800000u) {
    // Inf stays Inf; a NaN keeps the top of its payload and is made quiet so
    // that truncating the payload can never turn it into an Inf.
    if (a == 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u);
    return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  }
  // 65520 is halfway between the largest half (65504) and 2^16; the tie goes
  // to the even neighbour, which is 2^16, i.e. Inf.
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  if (a < 0x38800000u) {
    // Below the smallest normal half (2^-14): the result is subnormal or zero.
    // value = m * 2^(e-150) with the implicit bit in m; the half subnormal unit
    // is 2^-24, so the half mantissa is m >> (126 - e), rounded.
    const uint32_t e = a >> 23;
    const uint32_t shift = 126u - e;  // >= 14
    if (shift > 24) return sign;      // less than half of the smallest subnormal
    const uint32_t m = (a & 0x7fffffu) | 0x800000u;
    uint32_t r = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1u);
    if (rem > halfway || (rem == halfway && (r & 1u))) ++r;  // may carry into the normal range
    return static_cast<uint16_t>(sign | r);
  }
  // Normal: rebias the exponent (127 -> 15) and drop 13 mantissa bits. A carry
  // out of the mantissa correctly bumps the exponent.
  uint32_t h = (a >> 13) - (112u << 10);
  const uint32_t rem = a & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

// bfloat16 -> float32: bfloat16 is the top half of a float32.
inline float bf16_to_float(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }

// float32 -> bfloat16, round to nearest even. Overflow rounds to Inf, which
// is the correct IEEE result; NaN is kept quiet.
inline uint16_t float_to_bf16(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

}  // namespace kf
