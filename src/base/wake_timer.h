// WakeTimer: the sleep of one thread, which other threads end now (ring())
// or at a time they set (set()), without waking the sleeper to do so: the
// kernel keeps the time (a timerfd beside an eventfd), so a time set and
// cleared again while the thread sleeps costs that thread nothing. (A
// condition variable's timed wait needs the sleeper awake to change its
// time: on a machine with fewer cores than busy threads, that wake-up
// preempts one of them.)
//
// Linux only (timerfd, eventfd). Thread safety: ring(), set() and clear()
// from any thread; sleep() from one thread at a time. The times are on
// Clock (std::chrono::steady_clock, CLOCK_MONOTONIC).
#pragma once

#include "base/deadline.h"

namespace kf {

class WakeTimer {
 public:
  // Throws std::system_error when the descriptors cannot be created (the
  // process is out of file descriptors).
  WakeTimer();
  ~WakeTimer();
  WakeTimer(const WakeTimer&) = delete;
  WakeTimer& operator=(const WakeTimer&) = delete;

  // Ends the current sleep(), or the next one at once if none is under way.
  void ring();
  // sleep() ends at `at` (at once if that has passed), replacing the time
  // set before: one time at a time. A system call; the sleeper stays asleep.
  void set(Clock::time_point at);
  // No time set (sleep() ends only when rung). A system call.
  void clear();
  // Sleeps until ring() or the time set, whichever comes first; either one
  // that happened since the last sleep() ends it at once (a time replaced
  // by set() or clear() before it came never does). Spurious returns are
  // possible (a signal; a time that came and was cleared before this
  // sleep() read it): callers re-check their state.
  void sleep();

 private:
  int event_fd_ = -1;
  int timer_fd_ = -1;
};

}  // namespace kf
