// AsyncEngine: signature checks, completion, and the stall inspector.
#include <chrono>
#include <cstdio>

#include "base/deadline.h"
#include "base/log.h"
#include "sched/async_engine.h"
#include "sched/async_lane.h"
#include "sched/async_state.h"
#include "sched/async_texts.h"

namespace kf {

Status AsyncEngine::wait_transfer(const TransferHandle& t, const Deadline& d) {
  ShmTransport* shm = engine_->shm();
  return shm != nullptr ? shm->wait(t, d) : t->wait(d);
}

// Compares the signature frames that have arrived with ours. Called by
// running partitions while they wait (the watch) and by finalize().
Status AsyncEngine::check_signatures(AsyncOp* o) {
  std::lock_guard<std::mutex> lock(o->mu);
  if (o->sig_mismatch) return o->error;
  for (int r = 0; r < size_; ++r) {
    const TransferHandle& t = o->sig_recv[static_cast<size_t>(r)];
    if (r == rank_ || o->checked[static_cast<size_t>(r)] || !t || !t->done()) continue;
    if (!t->status().is_ok()) continue;
    o->checked[static_cast<size_t>(r)] = 1;
    SigRecord theirs = decode_sig(o->sig_in[static_cast<size_t>(r)].data());
    std::string diff = sig_difference(o->sig, rank_, theirs, r);
    if (!diff.empty()) {
      // A signature mismatch is the root cause: it replaces an earlier,
      // vaguer error (a frame of the wrong size, a timeout).
      o->error = invalid_usage(o->label() + ": ranks called it with different arguments: " + diff);
      o->sig_mismatch = true;
      o->failed.store(true);
      return o->error;
    }
  }
  return o->error;
}

std::string AsyncEngine::missing_ranks(AsyncOp* o, std::vector<int>* ranks) const {
  std::string out;
  for (int r = 0; r < size_; ++r) {
    const TransferHandle& t = o->sig_recv[static_cast<size_t>(r)];
    if (r == rank_ || !t || t->done()) continue;
    out += (out.empty() ? "" : ", ") + std::to_string(r);
    if (ranks != nullptr) ranks->push_back(r);
  }
  return out;
}

// After the last partition: wait for every peer's signature frame (bounded
// by the operation's deadline), compare, and complete the request.
void AsyncEngine::finalize(AsyncOp* o) {
  Status st = o->first_error();
  const bool peer_failure = st.code() == KF_ERR_REMOTE || st.code() == KF_ERR_ABORTED;
  std::vector<int> silent;  // ranks whose signature frames never came
  // (One a peer gave up on before it was submitted here waits for nothing.)
  if (size_ > 1 && !peer_failure && !o->gave_up) {
    for (int r = 0; r < size_; ++r) {
      const TransferHandle& t = o->sig_recv[static_cast<size_t>(r)];
      if (t) wait_transfer(t, o->deadline);
    }
    std::string missing = missing_ranks(o, &silent);
    Status sig = check_signatures(o);
    if (!missing.empty()) {
      Status health = engine_->health();
      if (!health.is_ok()) {
        st = Status(health.code(), o->label() + ": " + health.message());
        silent.clear();
      } else {
        st = timeout_error(timed_out_text(o->label(), timeout_ms_, never_submitted_text(missing)));
      }
    } else if (!sig.is_ok()) {
      st = sig;
    } else {
      for (int r = 0; r < size_ && st.is_ok(); ++r) {
        const TransferHandle& t = o->sig_recv[static_cast<size_t>(r)];
        if (t && !t->status().is_ok()) st = t->status();
      }
    }
    // Our own signature frames must be out before their buffer goes; after
    // a mismatch too, so that every peer sees it (withdrawn while still
    // queued behind data, they would leave a peer to time out instead).
    bool mismatch;
    {
      std::lock_guard<std::mutex> op_lock(o->mu);
      mismatch = o->sig_mismatch;
    }
    for (int r = 0; r < size_ && (st.is_ok() || mismatch); ++r) {
      const TransferHandle& t = o->sig_send[static_cast<size_t>(r)];
      if (t) {
        Status s = wait_transfer(t, o->deadline);
        if (!s.is_ok() && st.is_ok()) st = Status(s.code(), o->label() + ": " + s.message());
      }
    }
  }
  if (!st.is_ok()) {
    if (o->ctl_recv) o->ctl_recv->withdraw_outstanding(st);
    if (o->ctl_send) o->ctl_send->withdraw_outstanding(st);
    // What peers sent of it that no receive took, or send later (a late
    // submitter, a peer that started partitions), must not stay in the
    // store of early messages for good.
    if (size_ > 1) engine_->mailbox().forget(o->name_hash, o->seq, kPartitionBits);
  }
  std::shared_ptr<AsyncOp> keep;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = pending_.find({o->name_hash, o->seq});
    if (it != pending_.end()) {
      keep = std::move(it->second);
      pending_.erase(it);
    }
    o->req->op_ = nullptr;
    remembered_.erase({o->name_hash, o->seq});
  }
  // A peer may have run it on the lane (a kind mismatch): its record must
  // not wait there for ours forever.
  if (!st.is_ok() && lane_) lane_->forget(o->name_hash, o->seq);
  // The ranks that never submitted it must not complete it alone later.
  if (!silent.empty() && st.code() == KF_ERR_TIMEOUT) send_gave_up(o);
  emit(AsyncEvent::Type::kFinish, *o, 0, o->total_bytes, st);
  run_completion_callback(o->spec, st);
  o->req->finish(st);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (pending_.empty()) drain_cv_.notify_all();
  }
}

void AsyncEngine::drain(int64_t ms) {
  const Deadline d = Deadline::after_ms(ms < 0 ? 0 : ms);
  std::unique_lock<std::mutex> lock(mu_);
  // Lane operations (driven by the lane's thread meanwhile) do not signal
  // drain_cv_: look at them every millisecond.
  // Nor do event partitions once the progress thread has stopped (close()):
  // this thread advances them.
  while (!(pending_.empty() && (!lane_ || lane_->pending() == 0)) && !d.expired()) {
    drain_cv_.wait_for(lock,
                       std::chrono::milliseconds(d.remaining_ms(lane_ || events_ ? 1 : 1 << 30)));
    if (events_) {
      lock.unlock();
      drain_events();
      lock.lock();
    }
  }
}

// ---- stall inspector --------------------------------------------------------

void AsyncEngine::start_inspector_locked() {
  if (stop_) return;
  if (inspector_started_) {
    if (inspector_sleeping_) inspect_cv_.notify_one();
    return;
  }
  inspector_started_ = true;
  inspector_ = std::thread([this] { inspector_loop(); });
}

// Sleeps until the next stall warning or deadline of a pending operation
// (forever when none is pending: an idle communicator costs no CPU).
void AsyncEngine::inspector_loop() {
  std::unique_lock<std::mutex> lock(mu_);
  const int64_t warn_ns = stall_warn_ms_ * 1000000;
  while (!stop_) {
    const int64_t now = now_ns();
    int64_t next = INT64_MAX;
    std::vector<AsyncOp*> expired;
    for (auto& kv : pending_) {
      AsyncOp* o = kv.second.get();
      if (!o->ready) continue;
      if (!o->warned && warn_ns >= 0) {
        if (now - o->submit_ns >= warn_ns) {
          o->warned = true;
          std::string missing = missing_ranks(o);
          if (!missing.empty()) {
            KF_LOG_WARN(stall_text(o->label(), rank_, (now - o->submit_ns) / 1000000, missing));
          }
        } else {
          next = std::min(next, o->submit_ns + warn_ns);
        }
      }
      // Partitions still queued at the deadline never started: end them
      // here (running ones end by their own deadline).
      if (!o->deadline.is_never()) {
        const int64_t at = o->deadline.at_ns();
        // A fused operation waiting for data is "queued" too: no thread
        // waits for it, so its deadline is enforced here.
        const bool waiting_fused = o->fused && o->fused_state == AsyncOp::FusedState::kWaiting;
        const bool queued = o->queued > 0 || waiting_fused;
        if (queued && now >= at) {
          std::string missing = missing_ranks(o);
          o->set_error(timeout_error(o->label() + " timed out " +
                                     (waiting_fused ? "" : "in the queue ") + "after " +
                                     std::to_string(timeout_ms_) + " ms" +
                                     (!missing.empty() ? "; " + never_submitted_text(missing)
                                      : waiting_fused  ? " waiting for data"
                                                       : "")));
          if (waiting_fused) {
            fused_ready_locked(o, false);
          } else {
            drop_queued_locked(o);
            kick_events(o);  // its running event partitions end now too
            if (o->unfinished == 0) expired.push_back(o);
          }
        } else if (queued) {
          next = std::min(next, at);
        } else if (events_) {
          // Running: a thread that runs a partition ends it at the deadline,
          // but no thread waits for event partitions: they end here. (Any
          // running operation counts: one may have started just now.)
          if (now < at) {
            next = std::min(next, at);
          } else if (events_running(o)) {
            expire_events_locked(o);
          }
        }
      }
    }
    for (auto& kv : remembered_) {
      Remembered& r = kv.second;
      if (r.warned || r.submitted_by.empty() || warn_ns < 0) continue;
      if (now - r.first_ns >= warn_ns) {
        r.warned = true;
        std::string ranks;
        for (int s : r.submitted_by) ranks += (ranks.empty() ? "" : ", ") + std::to_string(s);
        char hash[20];
        std::snprintf(hash, sizeof(hash), "%016llx", static_cast<unsigned long long>(kv.first.first));
        KF_LOG_WARN(ranks_text(ranks) + " submitted operation #" + std::to_string(kv.first.second) +
                    " of name hash " + hash + " " + std::to_string((now - r.first_ns) / 1000000) +
                    " ms ago; rank " + std::to_string(rank_) + " has not submitted it");
      } else {
        next = std::min(next, r.first_ns + warn_ns);
      }
    }
    if (!expired.empty()) {
      lock.unlock();
      for (AsyncOp* o : expired) finalize(o);
      lock.lock();
      continue;
    }
    // Shared memory has no progress thread: while an operation waits for
    // peers' signature frames and nothing else may be reading the rings,
    // move bytes here (sleeping on the doorbell), in slices.
    ShmTransport* shm = engine_->shm();
    TransferHandle sig_wait;
    // A thread in help() drives every ring already (shm->wait moves the
    // bytes of all connections): do not compete with it for the cores.
    if (shm != nullptr && helping_.load() > 0) {
      // Skipped for a helper, which may stop at any time: look again soon.
      next = std::min(next, now + 20 * 1000000);
    } else if (shm != nullptr) {
      for (auto& kv : pending_) {
        AsyncOp* o = kv.second.get();
        if (!o->ready || o->confirmed) continue;
        for (auto& t : o->sig_recv) {
          if (t && !t->done()) {
            sig_wait = t;
            break;
          }
        }
        if (sig_wait) break;
      }
    }
    if (sig_wait) {
      int64_t ms = next == INT64_MAX ? 20 : std::max<int64_t>(1, std::min<int64_t>(20, (next - now) / 1000000));
      lock.unlock();
      shm->wait(sig_wait, Deadline::after_ms(ms));
      lock.lock();
      continue;
    }
    // Only a sleep without end needs waking for a new operation: otherwise
    // the next wake-up comes before any new operation's first deadline. It
    // starts after a short linger, so that a loop of operations that each
    // complete before the next is submitted does not wake this thread (a
    // context switch) at every submission; the linger also bounds how long
    // a new operation waits for this thread to drive shared memory.
    // (Frames remembered for operations not submitted here that it warned
    // of already, or gave up on, need no more looks: a new one wakes it.)
    if (next == INT64_MAX && pending_.empty()) {
      const uint64_t gen = remembered_gen_;  // (a frame remembered meanwhile: look again)
      if (inspect_cv_.wait_for(lock, std::chrono::milliseconds(kInspectorLingerMs), [&] {
            return stop_ || !pending_.empty() || remembered_gen_ != gen;
          })) {
        continue;
      }
      inspector_sleeping_ = true;
      inspect_cv_.wait(lock);
      inspector_sleeping_ = false;
    } else if (next == INT64_MAX) {
      inspect_cv_.wait_for(lock, std::chrono::milliseconds(kInspectorLingerMs));
    } else {
      // At most until the first deadline or warning an operation submitted
      // from now on can have, so that no submission needs to wake it (the
      // next event seen may be an older operation's warning, due after the
      // timeout of a new one).
      const int64_t first_ms =
          stall_warn_ms_ >= 0 && (timeout_ms_ < 0 || stall_warn_ms_ < timeout_ms_) ? stall_warn_ms_
                                                                                   : timeout_ms_;
      int64_t sleep_ns = next - now + 1000000;
      // (At least 10 ms: KF_STALL_WARN_MS=0 must not make it poll.)
      if (first_ms >= 0)
        sleep_ns = std::min<int64_t>(sleep_ns, (std::max<int64_t>(first_ms, 10) + 1) * 1000000);
      inspect_cv_.wait_for(lock, std::chrono::nanoseconds(sleep_ns));
    }
  }
}

}  // namespace kf
