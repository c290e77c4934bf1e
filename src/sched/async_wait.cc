// AsyncEngine: the elastic worker pool and the threads that wait (running
// partitions, parking, helping).
#include <algorithm>
#include <new>

#include "base/deadline.h"
#include "sched/async_engine.h"
#include "sched/async_lane.h"
#include "sched/async_state.h"
#include "transport/frame.h"

namespace kf {

// ---- running --------------------------------------------------------------

void AsyncEngine::worker_loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (!runnable_.empty()) {
      AsyncPartition* p = runnable_.front();
      runnable_.pop_front();
      if (p != nullptr) {
        p->state = AsyncPartition::State::kRunning;
      } else {
        admit_task_queued_ = false;
      }
      lock.unlock();
      if (p == nullptr) {
        run_chain(admit_and_start(true));
      } else if (p->index == kFinalizeTask) {
        finalize(p->op);
      } else {
        run_chain(p);
      }
      lock.lock();
      continue;
    }
    if (stop_) return;
    ++idle_workers_;
    work_cv_.wait(lock, [this] { return !runnable_.empty() || stop_; });
    --idle_workers_;
  }
}

// ---- waiting ----------------------------------------------------------------

void AsyncEngine::wait(const std::shared_ptr<AsyncRequest>& req, const WaitRest& rest) {
  if (req->lane_) {
    req->wait([this, &req] { return lane_->help(req, false); });
    return;
  }
  for (;;) {
    while (!req->done() && help(req, rest)) {
    }
    AsyncPartition* task = nullptr;
    if (!park(req, &task)) return;  // done
    run_handed(task, req, rest);
  }
}

// Registers the calling thread as a parked waiter and sleeps until `req` is
// done or a task is handed to it. Returns whether one was (in *task; null is
// an admission). A handed task is always run, even if `req` is done by then:
// it was taken off the queues for this thread.
bool AsyncEngine::park(const std::shared_ptr<AsyncRequest>& req, AsyncPartition** task) {
  Parked me{req.get()};
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (stop_) {
      lock.unlock();       // (close() needs the lock to end what is left)
      req->wait(nullptr);  // close() ends every operation
      return false;
    }
    parked_.push_back(&me);
  }
  req->sleep_until([&] { return me.handed; });  // (handed under req->mu_)
  {
    // Handing happens under mu_ and unregisters the waiter: once this
    // thread is off the list, nobody hands it anything more.
    std::lock_guard<std::mutex> lock(mu_);
    auto it = std::find(parked_.begin(), parked_.end(), &me);
    if (it != parked_.end()) parked_.erase(it);
  }
  std::lock_guard<std::mutex> lock(req->mu_);
  *task = me.task;
  return me.handed;
}

// Gives `p` (null: an admission) to a parked waiter instead of the pool: to
// the one waiting for p's operation, else, for an admission or a partition
// of an operation every rank submitted (which never waits for a peer's
// application code), to any. Caller holds mu_.
bool AsyncEngine::hand_to_parked_locked(AsyncPartition* p) {
  if (parked_.empty()) return false;
  auto it = parked_.end();
  if (p != nullptr) {
    it = std::find_if(parked_.begin(), parked_.end(),
                      [p](const Parked* w) { return w->req == p->op->req.get(); });
  }
  if (it == parked_.end()) {
    if (p != nullptr && (p->index == kFinalizeTask || !p->op->confirmed)) return false;
    it = parked_.begin();
  }
  Parked* w = *it;
  parked_.erase(it);
  if (p != nullptr) p->state = AsyncPartition::State::kRunning;
  std::lock_guard<std::mutex> lock(w->req->mu_);
  w->task = p;
  w->handed = true;
  w->req->notify_locked();
  return true;
}

// Runs a task handed to a parked waiter of `req`.
void AsyncEngine::run_handed(AsyncPartition* p, const std::shared_ptr<AsyncRequest>& req,
                             const WaitRest& rest) {
  if (p == nullptr) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      admit_task_queued_ = false;
    }
    p = admit_and_start(true);
    if (p != nullptr) run_then_return(p, req, rest);
  } else if (p->index == kFinalizeTask) {
    finalize(p->op);
  } else {
    run_then_return(p, req, rest);
  }
}

bool AsyncEngine::help(const std::shared_ptr<AsyncRequest>& req, const WaitRest& rest) {
  if (req->lane_) return lane_->help(req, true);
  // The fused frames held here leave before this thread waits or runs
  // anything (the peers may need them), but with the engine's lock
  // released, and for a fused operation of ours only once this thread
  // counts as its helper: the peers' answer to them may come at once, and
  // finding no helper, the transport's thread would hand the operation to
  // the completer thread (two wake-ups more, on the 8-byte round trip one
  // operation in four).
  bool flushed = false;
  auto flush = [&] {
    if (fuser_ && !flushed) fuser_->flush();
    flushed = true;
  };
  AsyncPartition* mine = nullptr;
  {
    std::unique_lock<std::mutex> lock(mu_);
    for (auto it = runnable_.begin(); it != runnable_.end(); ++it) {
      if (*it != nullptr && (*it)->op->req == req) {
        mine = *it;
        runnable_.erase(it);
        break;
      }
    }
    AsyncOp* own = req->op_;
    if (mine == nullptr) {
      // A fused operation ready to complete (never waits): ours first.
      AsyncOp* done = take_completion_locked(req.get(), true);
      if (done != nullptr) mine = &done->parts[0];
    }
    if (mine == nullptr && own != nullptr && own->fused) {
      if (own->fused_state == AsyncOp::FusedState::kHanded) {
        mine = &own->parts[0];
      } else if (own->fused_state == AsyncOp::FusedState::kWaiting) {
        // Move its data here (shared memory has no progress thread; over
        // TCP the waiter reads the socket itself): the receive that
        // completes last hands the operation to this thread.
        auto first_open = [own]() -> TransferHandle {
          for (const auto& r : own->one_shot.receives()) {
            if (!r->done()) return r;
          }
          return nullptr;
        };
        TransferHandle t = first_open();
        // Another thread waiting for the same request may complete and
        // free the operation while this one drives its data: hold it.
        std::shared_ptr<AsyncOp> hold = pending_.at({own->name_hash, own->seq});
        ++own->helpers;
        ++helping_;
        lock.unlock();
        flush();
        if (t)
          wait_transfer(
              t, Deadline::after_ms(std::min(20, std::max(1, own->deadline.remaining_ms()))));
        // The fuser's timer may have gone to sleep without end while this
        // thread drove the rings: the last helper to leave wakes it, or the
        // fused operations still waiting (completed by callbacks alone)
        // would have no thread to move their data.
        if (helping_.fetch_sub(1) == 1 && fused_waiting_ops_.load() > 0) fuser_->wake();
        lock.lock();
        // No receive left open, yet not ready: the last receive's listener
        // is about to run (Transfer::complete wakes the waiters before it
        // calls the listeners). Stay counted as a helper until it has, so
        // that it hands the operation to this thread rather than to the
        // completer thread (two wake-ups more). Yield, not spin on the lock.
        while (own->fused_state == AsyncOp::FusedState::kWaiting && !first_open() &&
               !own->deadline.expired()) {
          lock.unlock();
          std::this_thread::yield();
          lock.lock();
        }
        --own->helpers;
        if (own->fused_state != AsyncOp::FusedState::kHanded) {
          if (!first_open()) {
            // Past its deadline (the inspector fails it): do not spin on
            // the lock meanwhile.
            lock.unlock();
            std::this_thread::yield();
          }
          return true;
        }
        mine = &own->parts[0];
      }
      if (mine != nullptr) own->fused_state = AsyncOp::FusedState::kRunning;
    }
    // None of ours, but started partitions of other operations wait for a
    // worker: run the first here (this thread would only sleep, and the
    // operations it waits for often need them, e.g. under wait_all). Only
    // of an operation every rank submitted (confirmed): one that waits for
    // a peer's submission could keep this thread, and the application's
    // next step, from the peer that waits for that step to submit it.
    if (mine == nullptr && !req->done()) {
      for (auto it = runnable_.begin(); it != runnable_.end(); ++it) {
        if (*it != nullptr && (*it)->index != kFinalizeTask && (*it)->op->confirmed) {
          mine = *it;
          runnable_.erase(it);
          break;
        }
      }
    }
    if (mine == nullptr) {
      // Nothing to run yet: if the op waits for peers' signature frames
      // over shared memory (which has no progress thread), read them here.
      ShmTransport* shm = engine_->shm();
      if (shm == nullptr) {
        lock.unlock();
        flush();
        return false;
      }
      TransferHandle t;
      for (auto& kv : pending_) {
        AsyncOp* o = kv.second.get();
        if (o->req != req || !o->ready || o->confirmed) continue;
        for (auto& s : o->sig_recv) {
          if (s && !s->done()) {
            t = s;
            break;
          }
        }
        break;
      }
      lock.unlock();
      flush();
      if (!t) return false;
      shm->wait(t, Deadline::after_ms(2));
      // A confirmation seen just now: admit here rather than wait for a
      // worker that the hook may have woken (one thread hand-off fewer).
      if (AsyncPartition* p = admit_and_start(true)) run_then_return(p, req, rest);
      return true;
    }
    mine->state = AsyncPartition::State::kRunning;
  }
  flush();
  if (mine->index == kFinalizeTask) {
    finalize(mine->op);
  } else {
    run_then_return(mine, req, rest);
  }
  return true;
}

// For a thread waiting for `req`: runs p and its continuations while req is
// pending (or the continuation is of a request in `rest`, which this thread
// waits for next), then hands the next continuation to the pool and returns.
void AsyncEngine::run_then_return(AsyncPartition* p, const std::shared_ptr<AsyncRequest>& req,
                                  const WaitRest& rest) {
  p = run_partition_task(p);
  while (p != nullptr && (!req->done() || rest.has(p->op->req.get()))) p = run_partition_task(p);
  if (p != nullptr) hand_off(p);
}

AsyncPartition* AsyncEngine::run_partition_task(AsyncPartition* p) {
  if (runs_as_event(p)) {
    start_event(p);  // returns at once; its end starts its continuation
    return nullptr;
  }
  AsyncOp* o = p->op;
  Status st;
  if (o->fused) {
    st = run_fused(o);  // its start was at submission
  } else {
    emit(AsyncEvent::Type::kStart, *o, p->index, p->bytes, Status::ok());
    st = o->failed.load() ? o->first_error() : run_planned(p);
    // Its start frame leaves with its first frame or before it first
    // waits; one that did neither (empty, or failed before) sends it now.
    engine_->flush_held();
  }
  emit(AsyncEvent::Type::kPartitionDone, *o, p->index, p->bytes, st);
  return partition_done(p, st);
}

// A partition of an operation that is not fused: its kind's algorithm on
// its slice, over a Peers view with the partition's own frame keys.
Status AsyncEngine::run_planned(AsyncPartition* p) {
  AsyncOp* o = p->op;
  OpPeers peers(engine_, o->spec.name, o->name_hash, (o->seq << kPartitionBits) | p->index,
                o->digest, o->deadline);
  if (o->plan.count > 1) {
    peers.set_display(o->seq, " partition " + std::to_string(p->index));
  } else {
    peers.set_display(o->seq, "");
  }
  if (size_ > 1) peers.set_watch([this, o] { return check_signatures(o); });
  // No exception may leave an engine thread (DESIGN.md: no abort on
  // errors): a failed allocation fails this operation instead.
  Status st;
  try {
    st = run_partition(peers, algo_, o->spec, o->plan, p->index);
  } catch (const std::bad_alloc&) {
    st = system_error(o->label() + ": out of memory");
  } catch (...) {
    st = internal_error(o->label() + ": unexpected exception");
  }
  if (!st.is_ok()) peers.withdraw_outstanding(st);
  return st;
}

// Releases p's credit and admits what it allows. Returns the first
// partition admitted as the caller's continuation, unless completing the
// operation (here, first) could block: then every admitted partition goes
// to the pool. A completion is quick when every peer's signature frame is
// in (confirmed) and no user callback runs.
AsyncPartition* AsyncEngine::partition_done(AsyncPartition* p, const Status& st, bool may_block) {
  AsyncOp* o = p->op;
  std::vector<AsyncPartition*> starts;
  bool fin, quick, on_worker = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    p->state = AsyncPartition::State::kDone;
    if (p->credited) credited_.erase(std::find(credited_.begin(), credited_.end(), p));
    if (p->peer_started) {
      peer_started_.erase(std::find(peer_started_.begin(), peer_started_.end(), p));
    }
    if (p->eager) --eager_running_;
    if (!st.is_ok()) {
      o->set_error(st);
      drop_queued_locked(o);
    }
    fin = --o->unfinished == 0;
    quick = !fin || (o->confirmed && !o->spec.on_complete);
    if (fin && !may_block && finalize_may_block(o)) {
      finalize_on_worker_locked(o);
      on_worker = true;
      quick = true;  // the continuation no longer waits behind the completion
    }
    admit_locked(&starts);
  }
  announce(starts, nullptr, 0);
  AsyncPartition* next = dispatch_starts(&starts, quick);
  if (fin && !on_worker) finalize(o);
  return next;
}

// Whether finalize(o) could wait: for a peer's signature frame, for its own
// to leave (queued behind data on a full socket), or in a user callback.
bool AsyncEngine::finalize_may_block(AsyncOp* o) {
  if (o->spec.on_complete) return true;
  for (int r = 0; r < size_; ++r) {
    const TransferHandle& in = o->sig_recv[static_cast<size_t>(r)];
    const TransferHandle& out = o->sig_send[static_cast<size_t>(r)];
    if ((in && !in->done()) || (out && !out->done())) return true;
  }
  return false;
}

}  // namespace kf
