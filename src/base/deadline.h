// A point in time after which a wait gives up.
#pragma once

#include <chrono>
#include <cstdint>

namespace kf {

using Clock = std::chrono::steady_clock;

// Nanoseconds on Clock, for time stamps (traces, stall ages).
inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

class Deadline {
 public:
  // A deadline `ms` milliseconds from now; ms < 0 means never.
  static Deadline after_ms(int64_t ms) {
    Deadline d;
    if (ms >= 0) {
      d.never_ = false;
      d.at_ = Clock::now() + std::chrono::milliseconds(ms);
    }
    return d;
  }
  static Deadline never() { return Deadline(); }

  bool expired() const { return !never_ && Clock::now() >= at_; }
  // Milliseconds left, clamped to [0, cap]; cap when there is no deadline.
  int remaining_ms(int cap = 1 << 30) const {
    if (never_) return cap;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at_ - Clock::now()).count();
    if (left < 0) return 0;
    return left > cap ? cap : static_cast<int>(left);
  }
  bool is_never() const { return never_; }
  Clock::time_point time_point() const { return at_; }
  // The deadline on the scale of now_ns() (meaningless when is_never()).
  int64_t at_ns() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(at_.time_since_epoch()).count();
  }

 private:
  bool never_ = true;
  Clock::time_point at_{};
};

}  // namespace kf
