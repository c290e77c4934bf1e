// A point in time after which a wait gives up.
#pragma once

#include <time.h>

#include <chrono>
#include <cstdint>

namespace kf {

using Clock = std::chrono::steady_clock;

// Nanoseconds on Clock, for time stamps (traces, stall ages).
inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

// now_ns() as of the system's last clock tick (CLOCK_MONOTONIC_COARSE, the
// same clock at a resolution of a few milliseconds), for a quarter of the
// cost: for stamps that time-outs and warnings measure, where being up to a
// tick early does not matter. Never ahead of now_ns().
inline int64_t now_coarse_ns() {
#ifdef CLOCK_MONOTONIC_COARSE
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
#else
  return now_ns();
#endif
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
