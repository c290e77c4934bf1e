// AsyncEngine: the priority queue and credit window (admission), starting
// partitions, the control frames peers exchange about operations, and a
// broken communicator (on_broken, stopping failed operations).
#include <algorithm>

#include "base/deadline.h"
#include "sched/async_engine.h"
#include "sched/async_lane.h"
#include "sched/async_state.h"
#include "sched/async_texts.h"
#include "sched/credit_window.h"
#include "transport/frame.h"

namespace kf {

// ---- scheduling -----------------------------------------------------------

// Starts queued partitions of confirmed operations in priority order while
// the credit allows, and always one when none of ours runs. Only operations
// that every rank submitted take credit, so credit is only ever held by
// partitions that run on every rank (each announced, hence admitted
// everywhere): they finish and release it, whatever the order of
// submissions. See async_engine.h.
void AsyncEngine::admit_locked(std::vector<AsyncPartition*>* starts) {
  while (AsyncPartition* p = admissible_locked()) {
    AsyncOp* o = p->op;
    p->state = AsyncPartition::State::kRunnable;
    p->credited = true;
    credited_.push_back(p);
    starts->push_back(p);
    if (--o->queued == 0) {
      ready_.erase(ready_.begin());
      o->in_ready = false;
    }
  }
}

// The next queued partition of the head of the ready queue if the credit
// lets it start now, else null. When it returns null with operations
// ready, a running partition weighs on the head, and its end admits again.
AsyncPartition* AsyncEngine::admissible_locked() {
  if (ready_.empty()) return nullptr;
  AsyncOp* o = ready_.begin()->op;
  while (o->parts[o->next_queued].state != AsyncPartition::State::kQueued) ++o->next_queued;
  AsyncPartition* p = &o->parts[o->next_queued];
  // Partitions that peers started count when they come first in our own
  // order (the same operation, or a more urgent one): then the ranks
  // share the window rather than each adding a partition of its own.
  const QueueKey& head = *ready_.begin();
  auto weigh = [&](const AsyncPartition* q, InFlight* f) {
    f->bytes += q->bytes;
    ++f->count;
    f->equal = f->equal && q->op != o && q->op->spec.priority == o->spec.priority;
  };
  InFlight f;
  for (const AsyncPartition* q : credited_) weigh(q, &f);
  for (const AsyncPartition* q : peer_started_) {
    if (q->op == o || QueueKey{q->op->spec.priority, q->op->order, q->op} < head) weigh(q, &f);
  }
  return credit_admits(f, p->bytes, credit_bytes_.load()) ? p : nullptr;
}

void AsyncEngine::admit_soon_locked() {
  // One admission task at a time is enough: it admits everything that
  // fits when it runs. None while nothing fits: the end of a running
  // partition that weighs on the head admits then (no wake-up for nothing).
  if (!admit_task_queued_ && admissible_locked() != nullptr) {
    admit_task_queued_ = true;
    if (!admit_on_drain_locked()) dispatch_locked(nullptr);
  }
}

void AsyncEngine::confirm_locked(AsyncOp* o) {
  if (o->confirmed) return;
  o->confirmed = true;
  if (o->queued > 0 && !o->in_ready) {
    ready_.insert(QueueKey{o->spec.priority, o->order, o});
    o->in_ready = true;
  }
}

void AsyncEngine::saw_signature_locked(AsyncOp* o, int src) {
  if (src < 0 || src >= size_ || o->seen[static_cast<size_t>(src)]) return;
  o->seen[static_cast<size_t>(src)] = 1;
  ++o->sigs_seen;
}

// A peer started op's partition `index`: start it here too, whatever the
// credit. It weighs on admission (admit_locked) if every rank submitted the
// operation (then it surely completes); one still waiting for a rank's
// submission must not, or that rank could wait for a partition it keeps
// queued.
void AsyncEngine::force_locked(AsyncOp* op, uint32_t index,
                               std::vector<AsyncPartition*>* starts) {
  AsyncPartition* p = &op->parts[index];
  if (p->state != AsyncPartition::State::kQueued) return;
  p->state = AsyncPartition::State::kRunnable;
  if (op->confirmed) {
    p->peer_started = true;
    peer_started_.push_back(p);
  }
  if (--op->queued == 0 && op->in_ready) {
    ready_.erase(QueueKey{op->spec.priority, op->order, op});
    op->in_ready = false;
  }
  if (starts != nullptr) {
    starts->push_back(p);
  } else if (!start_on_drain_locked(p)) {
    dispatch_locked(p);
  }
}

void AsyncEngine::drop_queued_locked(AsyncOp* op) {
  for (auto& p : op->parts) {
    if (p.state != AsyncPartition::State::kQueued) continue;
    p.state = AsyncPartition::State::kDone;
    --op->unfinished;
  }
  op->queued = 0;
  if (op->in_ready) {
    ready_.erase(QueueKey{op->spec.priority, op->order, op});
    op->in_ready = false;
  }
}

// Admits what the credit allows, announces it and dispatches it. After a
// confirmation seen on a transport thread (which must not send) this runs
// on a worker (a null entry of runnable_) or a parked waiter. With
// `keep_one`, the first partition admitted is returned, marked running, for
// the calling thread to run; the others go to the pool.
AsyncPartition* AsyncEngine::admit_and_start(bool keep_one) {
  std::vector<AsyncPartition*> starts;
  {
    std::lock_guard<std::mutex> lock(mu_);
    admit_locked(&starts);
  }
  announce(starts, nullptr, 0);
  return dispatch_starts(&starts, keep_one);
}

// Dispatches the partitions of *starts; with `keep_first`, the first one is
// kept back for the calling thread instead, marked running, and returned.
// Event partitions (sched/async_event.h) start here, on the calling thread:
// their start only posts transfers, so a hand-off to a worker would cost a
// wake-up and a thread switch for nothing.
AsyncPartition* AsyncEngine::dispatch_starts(std::vector<AsyncPartition*>* starts,
                                             bool keep_first) {
  if (starts->empty()) return nullptr;
  AsyncPartition* first = keep_first ? starts->front() : nullptr;
  std::vector<AsyncPartition*> here;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (AsyncPartition* p : *starts) {
      if (p == first) {
        p->state = AsyncPartition::State::kRunning;
      } else if (runs_as_event(p)) {
        if (stop_) continue;  // closed: nothing runs any more
        p->state = AsyncPartition::State::kRunning;
        here.push_back(p);
      } else {
        dispatch_locked(p);
      }
    }
  }
  for (AsyncPartition* p : here) start_event(p);
  return first;
}

void AsyncEngine::hand_off(AsyncPartition* p) {
  std::lock_guard<std::mutex> lock(mu_);
  p->state = AsyncPartition::State::kRunnable;
  dispatch_locked(p);
}

void AsyncEngine::run_chain(AsyncPartition* p) {
  while (p != nullptr) p = run_partition_task(p);
}

// Puts a started partition where a worker (or a waiting caller) takes it.
// A started partition must never wait for a thread: spawn one if none idle.
void AsyncEngine::dispatch_locked(AsyncPartition* p) {
  if (stop_) return;  // closed: nothing runs any more
  if (hand_to_parked_locked(p)) return;
  runnable_.push_back(p);
  if (idle_workers_ >= runnable_.size()) {
    work_cv_.notify_one();
  } else {
    workers_.emplace_back([this] { worker_loop(); });
  }
}

// Tells every peer that this rank started `starts` on its own credit (those
// of `skip` below `prefix` went out with its signature frame).
void AsyncEngine::announce(const std::vector<AsyncPartition*>& starts, const AsyncOp* skip,
                           uint32_t prefix) {
  if (size_ <= 1) return;
  for (AsyncPartition* p : starts) {
    if (p->op == skip && p->index < prefix) continue;
    AsyncOp* o = p->op;
    OpPeers peers(engine_, o->spec.name, o->name_hash, (o->seq << kPartitionBits) | p->index, 0,
                  o->deadline);
    // The partition's own frames follow at once (or it waits or ends, which
    // sends held frames first): the start frame rides along with them, one
    // write and one wake-up of the peer instead of two.
    peers.set_hold_sends(true);
    for (int r = 0; r < size_; ++r) {
      if (r != rank_) peers.isend(r, Tag{0, kStartStep}, nullptr, 0);
    }
  }
}

bool AsyncEngine::on_control_frame(int src, uint64_t name_hash, uint64_t wire_seq, uint32_t step,
                                   uint32_t chunk) {
  const uint64_t seq = wire_seq >> kPartitionBits;
  const uint32_t part = static_cast<uint32_t>(wire_seq & kPartitionMask);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pending_.find({name_hash, seq});
  if (step == kGaveUpStep && it != pending_.end() && it->second->ready) {
    // In progress here: it cannot complete any more.
    AsyncOp* o = it->second.get();
    o->set_error(timeout_error(
        timed_out_text(o->label(), timeout_ms_,
                       "rank " + std::to_string(src) + " gave up on it while this rank ran it")));
    stop_failed_locked(o);
    return false;
  }
  if (it != pending_.end() && it->second->ready) {
    AsyncOp* o = it->second.get();
    if (step == kSigStep) {
      for (uint32_t i = 0; i < chunk && i < o->plan.count; ++i) force_locked(o, i);
      saw_signature_locked(o, src);
      if (!o->confirmed && o->sigs_seen + 1 == static_cast<uint32_t>(size_)) {
        confirm_locked(o);
      }
    } else if (part < o->plan.count) {
      force_locked(o, part);
    }
    // A confirmation, or a forced partition that took the head's operation
    // out of the queue (the window of the new head may be wider, see
    // credit_window.h), can let the head start with no partition ending.
    admit_soon_locked();
    return false;
  }
  if (it == pending_.end()) {
    // A signature frame for a lane operation: the peer ran another kind.
    if (step == kSigStep && lane_ && lane_->on_foreign_signature(src, name_hash, seq)) return true;
    const uint64_t* next = next_seq_.get({name_hash, 0});
    // (A lane operation is taken in under this lock as it is numbered.)
    if (next != nullptr && seq < *next) {
      return true;  // already finished here: no receive will ever take it
    }
  }
  Remembered& r = remembered_[{name_hash, seq}];
  if (r.first_ns == 0) r.first_ns = now_ns();
  if (step == kSigStep) {
    if (r.submitted_by.empty()) {
      // The inspector reports stalls of these too: it looks again.
      ++remembered_gen_;
      if (inspector_sleeping_) inspect_cv_.notify_one();
    }
    r.submitted_by.insert(src);
    if (chunk > r.prefix) r.prefix = chunk;
  } else if (step == kGaveUpStep) {
    r.gave_up = true;
  } else {
    r.parts.insert(part);
  }
  return false;
}

// Tells every peer that `o` timed out here: the silent ones must not
// complete it alone when they submit it later, nor the others with the
// silent ones' data.
void AsyncEngine::send_gave_up(const AsyncOp* o) {
  OpPeers peers(engine_, o->spec.name, o->name_hash, (o->seq << kPartitionBits) | kPartitionMask, 0,
                Deadline::after_ms(timeout_ms_));
  for (int r = 0; r < size_; ++r) {
    if (r != rank_) peers.isend(r, Tag{0, kGaveUpStep}, nullptr, 0);
  }
}

void AsyncEngine::on_broken(const Status& why) {
  // Pending operations end with the cause: their requests report it.
  bool reported = false;
  if (lane_) {
    reported = lane_->pending() > 0;
    lane_->on_broken(why);
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& kv : pending_) {
    AsyncOp* o = kv.second.get();
    if (!o->ready) continue;
    reported = true;
    o->set_error(why);
    stop_failed_locked(o);
  }
  if (reported) engine_->cause_reported();
}

// `o` failed (its error is set): a fused one waiting for data completes
// with the error, queued partitions never run, and if nothing of it runs any
// more its finalize goes to a worker (completion may wait on transports:
// never on the calling thread, which may be a transport's).
void AsyncEngine::stop_failed_locked(AsyncOp* o) {
  if (o->fused) fused_ready_locked(o, false);
  const uint32_t before = o->unfinished;
  drop_queued_locked(o);
  if (before != 0 && o->unfinished == 0) finalize_on_worker_locked(o);
  kick_events(o);  // its running event partitions end with the error
}

void AsyncEngine::finalize_on_worker_locked(AsyncOp* o) {
  o->finalize_task.op = o;
  o->finalize_task.index = kFinalizeTask;
  o->finalize_task.state = AsyncPartition::State::kRunnable;
  dispatch_locked(&o->finalize_task);
}

}  // namespace kf
