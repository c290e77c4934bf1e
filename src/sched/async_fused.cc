// AsyncEngine: fused operations (see async_engine.h and sched/fusion.h).
// A fused all_reduce sends everything at submission and is completed by
// events (its receives completing, a signature mismatch, its deadline), not
// by a thread that blocks for it.
#include <algorithm>

#include "base/log.h"
#include "sched/async_engine.h"
#include "sched/async_lane.h"
#include "sched/async_state.h"
#include "sched/op_kind.h"

namespace kf {

bool AsyncEngine::fusible(const AsyncOpSpec& spec, const PartitionPlan& plan,
                          uint64_t bytes) const {
  // The stall inspector and deadline handling below assume one partition;
  // an empty operation is a barrier in disguise and stays on the usual path.
  return fuser_ != nullptr && spec.kind == kAllReduce && !spec.body && plan.count == 1 &&
         bytes > 0 && bytes <= fusion_threshold_;
}

// After the signature frames went to the fuser: posts the data receives,
// appends the data for every peer, and lets events complete the operation.
// With `keep_ready`, an operation whose data is all in already (the peers
// submitted first) is not handed to another thread: it is marked running
// and true returned, for the submitting thread to complete at once.
bool AsyncEngine::start_fused(AsyncOp* o, const std::shared_ptr<AsyncOp>& keep, bool keep_ready) {
  const uint64_t wire = o->seq << kPartitionBits;  // partition 0
  o->fused_peers.reset(
      new OpPeers(engine_, o->spec.name, o->name_hash, wire, o->digest, o->deadline));
  o->fused_peers->set_display(o->seq, "");
  o->fused_peers->set_fuser(fuser_.get());
  std::weak_ptr<AsyncOp> w = keep;
  o->fused_peers->set_recv_listener([this, w] { fused_event(w, true); });
  o->fused_waiting.store(static_cast<uint32_t>(size_ - 1));
  o->one_shot.start(*o->fused_peers, o->spec.send, o->spec.count, o->spec.dtype,
                    static_cast<kf_op_t>(o->spec.op));
  o->fused_ticket = fuser_->last_ticket();  // at least its own frames
  emit(AsyncEvent::Type::kStart, *o, 0, o->parts[0].bytes, Status::ok());
  // Signature frames that were already here completed their receives
  // before those were listed in the operation: compare them now.
  const Status early = check_signatures(o);
  // Events while it was being submitted found it not yet waiting: what they
  // saw (all data in, a failure) is read here instead.
  bool wake_timer = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const bool data_in = o->fused_waiting.load() == 0;
    const bool failed = o->failed.load() || !early.is_ok();
    if (keep_ready && data_in && !failed && !stop_) {
      o->fused_state = AsyncOp::FusedState::kRunning;
      o->fused_at_submission = true;
      o->parts[0].state = AsyncPartition::State::kRunning;
      return true;
    }
    o->fused_state = AsyncOp::FusedState::kWaiting;
    const bool first = fused_waiting_ops_.fetch_add(1) == 0;
    if (data_in || failed) {
      fused_ready_locked(o, data_in && !failed);
    } else {
      // The first to wait with no thread helping: the fuser's timer must
      // drive the rings for it, and may have gone to sleep without end
      // since its frames' append woke it (a long preemption).
      wake_timer = first && helping_.load() == 0;
    }
  }
  if (wake_timer) fuser_->wake();
  return false;
}

// A receive of a fused operation completed (data: one of its data
// receives; else a signature frame, which only matters if it differs).
void AsyncEngine::fused_event(const std::weak_ptr<AsyncOp>& w, bool data) {
  // `op` may be the last reference: ~AsyncOp then runs here, on a transport
  // thread, perhaps under the mailbox's lock. It must never call into the
  // mailbox or a transport (it does not: its transfers are all complete).
  std::shared_ptr<AsyncOp> op = w.lock();
  if (!op) return;
  AsyncOp* o = op.get();
  if (data) {
    if (o->fused_waiting.fetch_sub(1) != 1) return;
  } else if (check_signatures(o).is_ok()) {
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  fused_ready_locked(o, data);
}

// The operation can complete now: give its partition to a thread in help()
// for its request if there is one (no hand-off), or to a parked waiter.
// Else, when every data receive is in (so is every signature frame: each
// peer sent its signature before its data), completing never waits: the
// completer thread takes it,
// and many operations made ready by one bundle cost it one wake-up, not a
// worker each. Failures (a mismatch, a deadline, a lost peer) may wait in
// finalize() and go to the worker pool.
void AsyncEngine::fused_ready_locked(AsyncOp* o, bool data_complete) {
  if (o->fused_state != AsyncOp::FusedState::kWaiting) return;
  fused_waiting_ops_.fetch_sub(1);
  if (o->helpers > 0) {
    o->fused_state = AsyncOp::FusedState::kHanded;
    return;
  }
  o->fused_state = AsyncOp::FusedState::kDispatched;
  if (!data_complete || stop_) {
    dispatch_locked(&o->parts[0]);
    return;
  }
  if (hand_to_parked_locked(&o->parts[0])) return;
  completions_.push_back(o);
  if (!completer_.joinable()) {
    completer_ = std::thread([this] { completer_loop(); });
  } else if (completer_idle_) {
    completer_cv_.notify_one();
  }
}

void AsyncEngine::completer_loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (AsyncOp* o = take_completion_locked(nullptr, true)) {
      lock.unlock();
      run_chain(&o->parts[0]);
      lock.lock();
      continue;
    }
    if (stop_) return;
    completer_idle_ = true;
    completer_cv_.wait(lock, [this] { return !completions_.empty() || stop_; });
    completer_idle_ = false;
  }
}

// Takes a completable fused operation off the completer's queue and marks
// it running: `req`'s if there, else (if `any`) the first; null if none.
// Caller holds mu_.
AsyncOp* AsyncEngine::take_completion_locked(const AsyncRequest* req, bool any) {
  auto it = std::find_if(completions_.begin(), completions_.end(),
                         [&](AsyncOp* o) { return o->req.get() == req; });
  if (it == completions_.end() && any) it = completions_.begin();
  if (it == completions_.end()) return nullptr;
  AsyncOp* o = *it;
  completions_.erase(it);
  o->parts[0].state = AsyncPartition::State::kRunning;
  o->fused_state = AsyncOp::FusedState::kRunning;
  return o;
}

// The partition of a fused operation: every receive has completed (or the
// operation failed), so this never waits for a peer.
Status AsyncEngine::run_fused(AsyncOp* o) {
  Status st;
  if (o->failed.load()) {
    st = o->first_error();
  } else {
    try {
      st = o->one_shot.finish(*o->fused_peers, o->spec.recv);
    } catch (const std::bad_alloc&) {
      st = system_error(o->label() + ": out of memory");
    }
  }
  if (!st.is_ok()) o->fused_peers->withdraw_outstanding(st);
  // This rank may have all it needs while its own frames are still held:
  // the peers need them, whether or not anyone here waits any more. On the
  // submitting thread they wait for the next flush instead: a burst that
  // completes as it is submitted (the peers were ahead) would send a
  // bundle per operation.
  if (!o->fused_at_submission) fuser_->flush_through(o->fused_ticket);
  return st;
}

void AsyncEngine::poll(const std::shared_ptr<AsyncRequest>& req) {
  if (req->lane_) {
    lane_->poll();
    return;
  }
  if (fuser_) fuser_->flush();
  if (ShmTransport* shm = engine_->shm()) shm->progress();
  AsyncOp* o = nullptr;
  {
    // Ready but not taken by the completer yet: complete it here.
    std::lock_guard<std::mutex> lock(mu_);
    o = take_completion_locked(req.get(), false);
  }
  if (o == nullptr) return;
  // Never blocks: what its completion admitted goes to the pool.
  if (AsyncPartition* next = run_partition_task(&o->parts[0])) hand_off(next);
}

}  // namespace kf
