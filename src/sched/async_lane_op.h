// What the files of AsyncLane (async_lane.cc: submission and matching;
// async_lane_run.cc: the log; async_lane_drive.cc: driving, failure and
// shutdown) share: an operation's state and the log's verbs. Internal to
// them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "base/dtype.h"
#include "base/status.h"
#include "sched/async_engine.h"
#include "sched/engine.h"

namespace kf {

// A log entry's verb (LaneEntry::verb). kRun: the next partition of an
// operation. kWithdraw: an operation that timed out unready. kFuse: one of
// the `reserved` entries of a fused pass (appended together, the first at
// the position a driver reads next). kTiny: complete a tiny operation from
// its records (see in_time_locked()).
struct LaneVerb {
  enum : uint32_t { kRun = 1, kWithdraw = 2, kFuse = 3, kTiny = 4 };
};

// The latest operations that failed before all their records were read
// whose late records are dropped (see forget_locked()).
constexpr size_t kLaneForgotten = 1024;

// While waiters drive, the lane thread looks only every this many cycles
// (KF_FUSION_CYCLE_US) at first, and twice as long after each look that
// finds they still do, up to kLaneWaiterCyclesMax: each look preempts a
// driver on a busy machine.
constexpr int64_t kLaneWaiterCycles = 8;
constexpr int64_t kLaneWaiterCyclesMax = 32;

// One submitted operation on the lane.
struct LaneOp {
  explicit LaneOp(AsyncOpSpec&& s) : spec(std::move(s)) {}
  AsyncOpSpec spec;
  uint64_t name_hash = 0;
  uint64_t seq = 0;
  uint64_t order = 0;
  uint64_t part_elems = 1;
  uint32_t parts = 1;
  uint32_t done_parts = 0;  // driver only (under mu_)
  int64_t submit_ns = 0;
  int64_t deadline_ns = INT64_MAX;  // steady clock; INT64_MAX: none
  std::shared_ptr<AsyncRequest> req;
  bool ready = false;      // every rank submitted it alike
  bool tiny_late = false;  // tiny, ready too close to its deadline: via the log (kTiny)
  bool running = false;    // a partition is in the arena (the driver ends it)
  bool warned = false;     // stall warning logged
  bool stale = false;      // counted in stale_left_ (see AsyncLane::mark_stale_locked)
  // Matching in the operation itself (AsyncLane::in_op()): the local ranks
  // whose record was read (bit j: rank j; this rank's own bit once its
  // record is published), and the difference the lowest disagreeing rank's
  // record showed ("" while none did).
  uint64_t seen = 0;
  int differs_rank = -1;
  std::string differs;
  Status result;
  OpKey key() const { return {name_hash, seq}; }
  uint64_t bytes() const { return spec.count * dtype_size(spec.dtype); }
  // The arena's signature digest of `count` elements of it.
  uint32_t digest(uint64_t count) const {
    OpSignature s;
    s.kind = spec.kind;
    s.count = count;
    s.dtype = static_cast<int32_t>(spec.dtype);
    s.op = spec.op;
    s.root = spec.root;
    return s.digest();
  }
  std::string label() const { return "operation '" + spec.name + "' #" + std::to_string(seq); }
};

}  // namespace kf
