// The 16-bit float conversions (IEEE half and bfloat16) against independent
// references: every value round-trips, midpoints round to even, specials survive.
#include "algo/half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include "sixteen_bit.h"

namespace kf {
namespace test {
namespace {

TEST(Half, RoundTripsEveryValue) {
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const uint16_t x = static_cast<uint16_t>(h);
    const uint16_t back = float_to_half(half_to_float(x));
    if (half_is_nan(x)) {
      ASSERT_TRUE(half_is_nan(back)) << std::hex << h;
    } else {
      ASSERT_EQ(back, x) << std::hex << h;
    }
  }
}

TEST(Half, KnownValues) {
  EXPECT_EQ(half_to_float(0x3c00), 1.0f);
  EXPECT_EQ(half_to_float(0xc000), -2.0f);
  EXPECT_EQ(half_to_float(0x7bff), 65504.0f);
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));     // smallest subnormal
  EXPECT_EQ(half_to_float(0x03ff), std::ldexp(1023.0f, -24));  // largest subnormal
  EXPECT_EQ(half_to_float(0x0400), std::ldexp(1.0f, -14));     // smallest normal
  EXPECT_TRUE(std::isinf(half_to_float(0x7c00)));
  EXPECT_TRUE(std::isnan(half_to_float(0x7e00)));
  EXPECT_TRUE(std::signbit(half_to_float(0x8000)));

  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(float_to_half(inf), 0x7c00);
  EXPECT_EQ(float_to_half(-inf), 0xfc00);
  EXPECT_TRUE(half_is_nan(float_to_half(std::nanf(""))));
  // A NaN whose payload lives only in the low bits must stay a NaN.
  uint32_t low_nan_bits = 0x7f800001u;
  float low_nan;
  std::memcpy(&low_nan, &low_nan_bits, 4);
  EXPECT_TRUE(half_is_nan(float_to_half(low_nan)));
  EXPECT_EQ(float_to_half(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half(1e-10f), 0x0000);
  EXPECT_EQ(float_to_half(-1e-10f), 0x8000);
  // Overflow: 65520 is the tie between 65504 and 2^16 and goes to Inf.
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);
  EXPECT_EQ(float_to_half(next_down(65520.0f)), 0x7bff);
  EXPECT_EQ(float_to_half(1e6f), 0x7c00);
  // 2^-25 is the tie between 0 and the smallest subnormal: even is 0.
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(float_to_half(next_up(std::ldexp(1.0f, -25))), 0x0001);
  // 3 * 2^-25 ties between subnormals 1 and 2: even is 2.
  EXPECT_EQ(float_to_half(std::ldexp(3.0f, -25)), 0x0002);
  // The largest subnormal rounds up into the smallest normal.
  EXPECT_EQ(float_to_half(std::ldexp(1023.5f, -24)), 0x0400);
  // 1 + 2^-11 ties between 1 and 1 + 2^-10: even is 1.
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
}

// Every midpoint between neighbouring halves (exact in float) must go to the
// even one, and the floats just beside it to the nearer one.
TEST(Half, RoundsEveryMidpointToEven) {
  for (uint32_t h = 0; h < 0x7bffu; ++h) {
    for (uint32_t sign : {0u, 0x8000u}) {
      const uint16_t lo = static_cast<uint16_t>(h | sign);
      const uint16_t hi = static_cast<uint16_t>((h + 1) | sign);
      const float mid =
          static_cast<float>((static_cast<double>(half_to_float(lo)) + half_to_float(hi)) / 2);
      const uint16_t even = (h & 1u) == 0 ? lo : hi;
      ASSERT_EQ(float_to_half(mid), even) << std::hex << h;
      const float toward_lo = sign ? next_up(mid) : next_down(mid);
      const float toward_hi = sign ? next_down(mid) : next_up(mid);
      ASSERT_EQ(float_to_half(toward_lo), lo) << std::hex << h;
      ASSERT_EQ(float_to_half(toward_hi), hi) << std::hex << h;
    }
  }
}

#if defined(__FLT16_MAX__)
// Where the compiler has _Float16, its conversion is a second reference.
TEST(Half, MatchesCompilerConversion) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 1000000; ++i) {
    uint32_t u = bits(rng);
    // Bias half of the draws into the range where halves live.
    if (i & 1) u = (u & 0x807fffffu) | ((100u + (u >> 24) % 50u) << 23);
    float f;
    std::memcpy(&f, &u, 4);
    const _Float16 ref = static_cast<_Float16>(f);
    uint16_t want;
    std::memcpy(&want, &ref, 2);
    const uint16_t got = float_to_half(f);
    if (std::isnan(f)) {
      ASSERT_TRUE(half_is_nan(got));
    } else {
      ASSERT_EQ(got, want) << std::hex << u;
    }
  }
}
#endif

TEST(BFloat16, RoundTripsEveryValue) {
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    const uint16_t x = static_cast<uint16_t>(b);
    const uint16_t back = float_to_bf16(bf16_to_float(x));
    if (bf16_is_nan(x)) {
      ASSERT_TRUE(bf16_is_nan(back)) << std::hex << b;
    } else {
      ASSERT_EQ(back, x) << std::hex << b;
    }
  }
}

TEST(BFloat16, RoundsEveryMidpointToEven) {
  // Includes the step from the largest finite value to Inf (0x7f7f -> 0x7f80).
  for (uint32_t b = 0; b < 0x7f80u; ++b) {
    for (uint32_t sign : {0u, 0x8000u}) {
      const uint16_t lo = static_cast<uint16_t>(b | sign);
      const uint16_t hi = static_cast<uint16_t>((b + 1) | sign);
      const uint32_t mid_bits = ((static_cast<uint32_t>(lo) << 16) | 0x8000u);
      float mid;
      std::memcpy(&mid, &mid_bits, 4);
      const uint16_t even = (b & 1u) == 0 ? lo : hi;
      ASSERT_EQ(float_to_bf16(mid), even) << std::hex << b;
      const float toward_lo = sign ? next_up(mid) : next_down(mid);
      const float toward_hi = sign ? next_down(mid) : next_up(mid);
      ASSERT_EQ(float_to_bf16(toward_lo), lo) << std::hex << b;
      ASSERT_EQ(float_to_bf16(toward_hi), hi) << std::hex << b;
    }
  }
}

TEST(BFloat16, Specials) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(float_to_bf16(inf), 0x7f80);
  EXPECT_EQ(float_to_bf16(-inf), 0xff80);
  EXPECT_TRUE(bf16_is_nan(float_to_bf16(std::nanf(""))));
  uint32_t low_nan_bits = 0xff800001u;
  float low_nan;
  std::memcpy(&low_nan, &low_nan_bits, 4);
  EXPECT_TRUE(bf16_is_nan(float_to_bf16(low_nan)));
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
}

}  // namespace
}  // namespace test
}  // namespace kf
