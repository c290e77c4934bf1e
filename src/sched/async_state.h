// The state behind AsyncEngine (private to src/sched/async_*.cc): one
// AsyncOp per submitted operation, one AsyncPartition per partition, and the
// engine's queues. See async_engine.h for the protocol.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "algo/one_shot.h"
#include "base/deadline.h"
#include "sched/async_engine.h"
#include "sched/async_event.h"
#include "sched/async_partition.h"
#include "sched/async_signature.h"
#include "sched/op_peers.h"

namespace kf {

constexpr uint32_t kFinalizeTask = 0xffffffffu;

struct AsyncPartition {
  enum class State { kQueued, kRunnable, kRunning, kDone };
  AsyncOp* op = nullptr;
  uint32_t index = 0;
  uint64_t bytes = 0;
  State state = State::kQueued;  // guarded by the engine mutex
  bool credited = false;         // started on this rank's credit
  bool peer_started = false;     // a peer started it, its operation confirmed here
  bool eager = false;            // started at submission, outside the credit
};

struct AsyncOp {
  AsyncOpSpec spec;
  uint64_t name_hash = 0;
  uint64_t seq = 0;
  uint64_t order = 0;  // local submission order (priority ties)
  uint32_t digest = 0;
  PartitionPlan plan;
  SigRecord sig;
  uint64_t total_bytes = 0;
  int64_t submit_ns = 0;
  Deadline deadline;
  std::shared_ptr<AsyncRequest> req;
  std::vector<AsyncPartition> parts;
  // A task that completes the operation on a worker (index kFinalizeTask),
  // for when the last partition finished while submit() still ran: submit()
  // must never block on peers.
  AsyncPartition finalize_task;

  // Guarded by the engine mutex.
  bool ready = false;        // partitions queued; control frames apply
  uint32_t unfinished = 0;   // partitions not done, +1 while submit() runs
  bool warned = false;       // stall warning logged
  bool confirmed = false;    // every peer's signature frame has arrived
  bool in_ready = false;     // listed in the ready queue
  uint32_t queued = 0;       // partitions in state kQueued
  uint32_t next_queued = 0;  // no queued partition below this index
  uint32_t sigs_seen = 0;
  std::vector<char> seen;    // per rank: signature frame arrived

  // Signature exchange: set up before any partition can run, then read-only
  // (the transfers themselves are thread safe).
  std::unique_ptr<OpPeers> ctl_recv, ctl_send;
  std::vector<char> sig_out;
  std::vector<std::vector<char>> sig_in;   // per rank
  std::vector<TransferHandle> sig_recv;    // per rank; null for self
  std::vector<TransferHandle> sig_send;    // per rank; null for self

  // A fused operation (sched/fusion.h): a small all_reduce whose frames
  // travel in bundles and which runs the one-shot algorithm, started by
  // submit(). Its single partition is never queued: it is dispatched (or
  // handed to a thread in help() for this request) once every peer's data
  // is in, a signature mismatch is seen, or the deadline passes, so no
  // thread blocks for it.
  enum class FusedState { kSubmitting, kWaiting, kDispatched, kHanded, kRunning };
  bool fused = false;
  std::unique_ptr<OpPeers> fused_peers;
  OneShotAllReduce one_shot;
  std::atomic<uint32_t> fused_waiting{0};  // data receives still open
  uint64_t fused_ticket = 0;               // the fuser's ticket of its last frame (set by submit())
  FusedState fused_state = FusedState::kSubmitting;  // guarded by the engine mutex
  // Completed by the submitting thread: its frames leave with the next
  // flush (a wait or test, the fuser's cycle), not one bundle per operation.
  bool fused_at_submission = false;
  bool gave_up = false;  // a peer had timed it out before this rank submitted it
  uint32_t helpers = 0;  // threads in help() driving its receives; engine mutex

  std::atomic<bool> failed{false};
  std::mutex mu;
  Status error;               // first failure; guarded by mu
  std::vector<char> checked;  // per rank: signature compared; guarded by mu
  bool sig_mismatch = false;  // error is the signature difference; guarded by mu
  // Its running event partitions (sched/async_event.h); guarded by mu.
  std::vector<std::shared_ptr<EventPartition>> events;

  void set_error(const Status& st) {
    std::lock_guard<std::mutex> lock(mu);
    if (error.is_ok()) error = st;
    failed.store(true);
  }
  Status first_error() {
    std::lock_guard<std::mutex> lock(mu);
    return error;
  }
  std::string label() const { return "operation '" + spec.name + "' #" + std::to_string(seq); }
};

}  // namespace kf
