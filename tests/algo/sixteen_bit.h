// Helpers shared by the 16-bit float tests: neighbouring floats and NaN
// patterns of IEEE half and bfloat16.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace kf {
namespace test {

inline float next_up(float f) {
  return std::nextafter(f, std::numeric_limits<float>::infinity());
}
inline float next_down(float f) {
  return std::nextafter(f, -std::numeric_limits<float>::infinity());
}

inline bool half_is_nan(uint16_t h) {
  return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0;
}
inline bool bf16_is_nan(uint16_t b) {
  return (b & 0x7f80u) == 0x7f80u && (b & 0x7fu) != 0;
}

}  // namespace test
}  // namespace kf
