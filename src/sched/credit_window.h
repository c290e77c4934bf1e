// The credit window's admission rule (ByteScheduler's credit; the
// scheduling section of async_engine.h): whether the head of the ready
// queue may start now, given the running partitions that weigh on it.
// Pure logic, used by AsyncEngine under its mutex (async_schedule.cc) and
// tested alone (tests/sched/credit_window_test.cc).
//
// The window bounds the bytes that an urgent operation, submitted later,
// finds in flight ahead of it. One rule widens it: while every partition
// that weighs is of another operation of the head's own priority (equal
// priorities, e.g. a FIFO workload: the application ranks none of them
// above the others), up to kEqualCreditFactor times the credit and at least
// two partitions may run, at most kEqualMaxRunning. Consecutive operations
// then overlap, so a rank's threads are not all waiting on one operation's
// round trip between two of them (over TCP a 1 MiB step was 3-7% slower
// than blocking calls with one operation at a time; perf/README.md,
// session 23). Two at a time is enough: with 4x the credit, four 1 MiB
// operations over TCP shared one connection and the step read +5..+15%
// against blocking calls, with 2x (two of them) -0.2..-6% (session 29).
// Partitions of one operation (one large layer) keep the plain window, so
// the layers submitted after it still overtake them soon. The price: an
// urgent operation submitted into such a run of equal ones finds up to 2x
// the credit (or two partitions of any size) in flight, not 1x.
//
// Any answer keeps the engine deadlock-free: only operations that every
// rank submitted take credit, and the head always starts when nothing
// weighs on it (async_engine.h, "Deadlock freedom").
#pragma once

#include <cstdint>

namespace kf {

// At most this many partitions weigh on an admission, so that tiny
// partitions cannot start thousands of threads. Partitions that peers
// started come on top (bounded by the peers' own limits), so a rank runs at
// most size * kMaxCredited partitions at once.
inline constexpr uint32_t kMaxCredited = 16;
// The widened window of equal priorities (see above).
inline constexpr uint64_t kEqualCreditFactor = 2;
inline constexpr uint32_t kEqualMaxRunning = 4;

// The running partitions that weigh on the head of the ready queue.
struct InFlight {
  uint64_t bytes = 0;   // their bytes
  uint32_t count = 0;   // their number
  bool equal = true;    // each of another operation of the head's priority
};

// Whether a partition of `head_bytes` may start under `credit` bytes.
// Always when nothing weighs on it, so any credit makes progress.
inline bool credit_admits(const InFlight& f, uint64_t head_bytes, uint64_t credit) {
  if (f.count == 0) return true;
  if (f.count >= kMaxCredited) return false;
  if (f.bytes + head_bytes <= credit) return true;
  return f.equal && f.count < kEqualMaxRunning &&
         (f.count < 2 || f.bytes + head_bytes <= kEqualCreditFactor * credit);
}

}  // namespace kf
