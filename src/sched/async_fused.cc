// AsyncEngine: fused operations (see async_engine.h and sched/fusion.h).
// A fused all_reduce sends everything at submission and is completed by
// events (its receives completing, a signature mismatch, its deadline), not
// by a thread that blocks for it.
#include "base/log.h"
#include "sched/async_engine.h"
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
void AsyncEngine::start_fused(AsyncOp* o, const std::shared_ptr<AsyncOp>& keep) {
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
  std::lock_guard<std::mutex> lock(mu_);
  o->fused_state = AsyncOp::FusedState::kWaiting;
  if (o->fused_ready || o->failed.load() || !early.is_ok()) fused_ready_locked(o);
}

// A receive of a fused operation completed (data: one of its data
// receives; else a signature frame, which only matters if it differs).
void AsyncEngine::fused_event(const std::weak_ptr<AsyncOp>& w, bool data) {
  std::shared_ptr<AsyncOp> op = w.lock();
  if (!op) return;
  AsyncOp* o = op.get();
  if (data) {
    if (o->fused_waiting.fetch_sub(1) != 1) return;
  } else if (check_signatures(o).is_ok()) {
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  fused_ready_locked(o);
}

// The operation can complete now: give its partition to a thread in help()
// for its request if there is one (no hand-off), else to the worker pool.
void AsyncEngine::fused_ready_locked(AsyncOp* o) {
  o->fused_ready = true;
  if (o->fused_state != AsyncOp::FusedState::kWaiting) return;
  if (o->helpers > 0) {
    o->fused_state = AsyncOp::FusedState::kHanded;
    return;
  }
  o->fused_state = AsyncOp::FusedState::kDispatched;
  dispatch_locked(&o->parts[0]);
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
  // the peers need them, whether or not anyone here waits any more.
  fuser_->flush_through(o->fused_ticket);
  return st;
}

void AsyncEngine::poll(const std::shared_ptr<AsyncRequest>& req) {
  if (fuser_) fuser_->flush();
  if (ShmTransport* shm = engine_->shm()) shm->progress();
  AsyncOp* o = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    o = req->op_;
    if (o == nullptr || !o->fused || o->fused_state != AsyncOp::FusedState::kDispatched) return;
    // Dispatched but not taken by a worker yet: run it here.
    bool found = false;
    for (auto it = runnable_.begin(); it != runnable_.end(); ++it) {
      if (*it == &o->parts[0]) {
        runnable_.erase(it);
        found = true;
        break;
      }
    }
    if (!found) return;
    o->parts[0].state = AsyncPartition::State::kRunning;
    o->fused_state = AsyncOp::FusedState::kRunning;
  }
  run_partition_task(&o->parts[0]);
}

}  // namespace kf
