// AsyncLane: driving (a waiter or the lane thread: see async_lane.h, 5.),
// a broken communicator (on_broken), shutdown, and the counters.
#include <sched.h>

#include <algorithm>
#include <chrono>

#include "base/cpu_relax.h"
#include "base/deadline.h"
#include "sched/async_lane.h"
#include "sched/async_lane_op.h"

namespace kf {
namespace {

// How long a driver polls before it sleeps on its doorbell.
constexpr auto kSpin = std::chrono::microseconds(50);
constexpr int kSleepMs = 5;
// A waiter drives for at most this long per help() call, so that
// kf_request_wait_any sees other requests complete.
constexpr auto kSlice = std::chrono::milliseconds(2);
// How long a large operation waits for a thread to drive it before the lane
// thread does (a training step's backward pass submits and computes on).
constexpr auto kGrace = std::chrono::microseconds(200);

}  // namespace

// ---- driving --------------------------------------------------------------

void AsyncLane::drive(const std::function<bool()>& stop, std::chrono::nanoseconds slice) {
  // The clock is read only every 16th idle poll: `until` and the end of the
  // spin are set at the first reading.
  Clock::time_point until = Clock::time_point::min(), spin_until = Clock::time_point::min();
  unsigned polls = 0;
  while (!stop()) {
    if (step()) {
      spin_until = Clock::time_point::min();  // spin again from the next reading
      continue;
    }
    if (!step_done_.empty() || !entry_done_.empty()) {
      step_done_.clear();  // finished operations are destroyed while nothing is new
      entry_done_.clear();
      continue;
    }
    if ((++polls & 15) != 0) {  // the clock and the locks only now and then
      cpu_relax();
      continue;
    }
    if (ended_.load(std::memory_order_acquire)) return;
    const auto now = Clock::now();
    if (until == Clock::time_point::min())
      until = slice.count() < 0 ? Clock::time_point::max() : now + slice;
    if (spin_until == Clock::time_point::min()) spin_until = now + kSpin;
    if (now >= until) return;
    // Shared memory has no progress thread: read the peer rings now and
    // then, so that frames for this rank (a peer's signature frame for an
    // operation it ran on the message path) arrive while it waits here.
    if ((polls & 63) == 0 && shm_->progress()) continue;
    if (now < spin_until) {
      if ((polls & 255) == 0) sched_yield();
      continue;
    }
    if (shm_->progress()) continue;
    Doorbell* bell = shm_->bell();
    uint32_t token = bell->prepare();
    if (!log_.news(pos_) && !dirty_.load() && !stop()) bell->sleep(token, kSleepMs);
    bell->done();
  }
}

bool AsyncLane::help(const std::shared_ptr<AsyncRequest>& req, bool any) {
  if (req->done()) return false;
  const uint64_t seen = completions_.load();
  want_.fetch_add(1);
  if (driver_mu_.try_lock()) {
    // (Driving on past the completions of other operations saves a return
    // and a re-entry per partition under kf_request_wait_all.) The stop
    // test reaches its state through one pointer, so that the
    // std::function holds it in place: a wider capture is a heap block
    // (malloc and free, whose code a step's data has flushed) per call.
    const struct {
      const AsyncRequest* req;
      bool any;
      uint64_t seen;
      const std::atomic<uint64_t>* completions;
    } until{req.get(), any, seen, &completions_};
    drive([s = &until] { return s->req->done() || (s->any && s->completions->load() != s->seen); },
          kSlice);
    waiter_drives_.fetch_add(1, std::memory_order_relaxed);
    driver_mu_.unlock();
    hand_left_over();
  } else {
    shm_->ring(me_);  // a driver asleep on the bell sees want_ and hands over
    std::unique_lock<std::mutex> lock(mu_);
    handoff_cv_.wait_for(lock, std::chrono::milliseconds(1));
  }
  want_.fetch_sub(1);
  return !req->done();
}

void AsyncLane::poll() {
  // (Inside a callback this thread may hold driver_mu_ already.)
  if (in_completion_callback() || !driver_mu_.try_lock()) return;
  step();
  driver_mu_.unlock();
  hand_left_over();
}

void AsyncLane::hand_left_over() {
  // Completions matching left in finished_ after the step collected them
  // (rare: records read while a driver looked at a deadline or ran a
  // withdrawal) go to the lane thread, which may sleep with no time set.
  if (!left_.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!finished_.empty()) thread_timer_.ring();
}

std::chrono::microseconds AsyncLane::grace_for(uint64_t bytes) const {
  if (waiters_lead_) return look_;
  return bytes > opts_.wake_bytes ? std::chrono::microseconds(kGrace) : cycle_;
}

void AsyncLane::alarm_locked(Clock::time_point at) {
  if (at >= alarm_) return;
  alarm_ = at;
  if (!thread_awake_) arm_locked();
}

size_t AsyncLane::mark_stale_locked(uint64_t order) {
  for (const auto& item : ready_) {
    if (item.order < order && !item.op->stale) {
      item.op->stale = true;
      ++stale_left_;
    }
  }
  return stale_left_;
}

void AsyncLane::arm_locked() {
  if (armed_ == alarm_) return;
  if (alarm_ != Clock::time_point::max()) {
    thread_timer_.set(alarm_);
  } else if (Clock::now() < armed_) {
    // (A time that passed is left: the thread's next sleep may return at
    // once for it, and finds nothing due.)
    thread_timer_.clear();
  }
  armed_ = alarm_;
}

void AsyncLane::thread_loop() {
  std::unique_lock<std::mutex> lock(mu_);
  auto sleep_on_timer = [&] {
    arm_locked();
    thread_awake_ = false;
    lock.unlock();
    thread_timer_.sleep();
    lock.lock();
    thread_awake_ = true;
  };
  while (!closed_) {
    // Work only this thread does runs now; pending operations when their
    // time came and no waiter drove meanwhile (see 5.). A time that came is
    // used up, whether it finds work or not.
    const auto now = Clock::now();
    const bool due = now >= alarm_;
    const bool pending = pending_locked();
    if (due || !pending) alarm_ = Clock::time_point::max();
    bool run = !replies_.empty() || !finished_.empty();
    if (!run && (due || (pending && alarm_ == Clock::time_point::max()))) {
      // A look (or pending work with no time: the last waiter left while
      // this thread was awake): did a waiter drive since the last look, or
      // since the burst began? (Counted at looks only: a wake-up for other
      // work between two looks must not hide a waiter's drive.)
      const uint64_t drives = waiter_drives_.load();
      const bool present = want_.load() > 0;
      const bool waiters = present || drives != drives_seen_;
      drives_seen_ = drives;
      const uint64_t since = look_order_;
      if (due) look_order_ = next_order_;
      const auto base = cycle_ * kLaneWaiterCycles;
      if (due && waiters) {
        // Waiters that drove lead, whether they left work or finished it
        // all (a run of tiny operations is rarely pending at a look). While
        // looks find one in the lane, or nothing pending, they grow rarer;
        // one that finds operations pending and nobody in the lane (a
        // backward pass that submits and computes on) brings them back to
        // kLaneWaiterCycles, so that the next can find that nobody came.
        waiters_lead_ = true;
        look_ = present || !pending ? std::min(look_ * 2, cycle_ * kLaneWaiterCyclesMax) : base;
        // Ready operations pending since the last look already, with nobody
        // in the lane now, run here: waiters drive up to what they wait
        // for, so those behind theirs that nobody waits for are not left to
        // them (the records are read first: an operation is ready once
        // every rank's record is).
        if (pending && !present) {
          ingest_locked();
          run = !finished_.empty() || mark_stale_locked(since) > 0;
        }
      } else if (due) {
        look_ = base;
      }
      if (pending && due && !waiters) {
        waiters_lead_ = false;  // nobody came in time: from now on, kGrace
        run = true;
      } else if (pending && !run) {
        alarm_locked(now + (waiters ? look_ : std::chrono::microseconds(kGrace)));
      }
    }
    if (!run) {
      sleep_on_timer();  // (with no time set, until a submission sets one or work rings)
      continue;
    }
    lock.unlock();
    const bool drove = driver_mu_.try_lock();
    if (drove) {
      drive(
          [this] {
            if (want_.load() > 0) return true;
            std::lock_guard<std::mutex> l(mu_);
            if (closed_) return true;
            if (!replies_.empty() || !finished_.empty()) return false;  // work only it does
            // Nobody waits: everything; waiters lead: the stale operations.
            return !pending_locked() || (waiters_lead_ && stale_left_ == 0);
          },
          std::chrono::nanoseconds(-1));
      driver_mu_.unlock();
    }
    lock.lock();
    handoff_cv_.notify_all();  // waiters may drive now
    // Another thread drives (it may be running a callback), or wants to:
    // with work only this thread does, a cycle before looking again, not a
    // spin (that thread's step takes the work).
    if ((!drove || want_.load() > 0) && !closed_ && (!replies_.empty() || !finished_.empty())) {
      alarm_locked(Clock::now() + cycle_);
      sleep_on_timer();
    }
  }
}

// ---- failure and shutdown -------------------------------------------------

LaneStats AsyncLane::stats() const {
  LaneStats s;
  s.fused_passes = fused_passes_.load(std::memory_order_relaxed);
  s.fused_ops = fused_ops_.load(std::memory_order_relaxed);
  s.fuse_max = fuse_max_;
  std::lock_guard<std::mutex> lock(mu_);
  s.unmatched = matches_.size();
  return s;
}

void AsyncLane::on_broken(const Status& why) {
  Done done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (broken_.is_ok()) broken_ = why.is_ok() ? internal_error("lane broken") : why;
    ended_.store(true);
    unpublished_.clear();  // nothing is published any more
    std::vector<LaneOp*> ending;
    for (auto& kv : ops_) {
      if (!kv.second->running) ending.push_back(kv.second.get());  // a driver ends a running one
    }
    for (LaneOp* op : ending) {
      end_locked(op, Status(broken_.code(), op->label() + ": " + broken_.message()), &done);
    }
    // Completion callbacks must not run on a transport thread (this may be
    // one): the lane thread runs them.
    for (auto& d : done) finished_.push_back(std::move(d));
  }
  dirty_.store(true);
  thread_timer_.ring();
  handoff_cv_.notify_all();
}

size_t AsyncLane::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ops_.size() + finished_.size();
}

void AsyncLane::close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_ && !thread_.joinable()) return;
  }
  on_broken(aborted_error("the communicator was destroyed with operations pending"));
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    ended_.store(true);
  }
  thread_timer_.ring();
  handoff_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  // Whatever the lane thread did not complete (it stops at closed_).
  Done done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    take_finished_locked(&done);
    replies_.clear();
  }
  complete(done);
  {
    std::lock_guard<std::mutex> driver(driver_mu_);  // a driver still in help() has left
    step_done_.clear();
    entry_done_.clear();
  }
  std::lock_guard<std::mutex> lock(mu_);
  matches_.clear();
}

}  // namespace kf
