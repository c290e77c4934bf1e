#include "sched/fusion.h"

#include <algorithm>
#include <chrono>

#include "base/deadline.h"
#include "sched/engine.h"
#include "transport/bundle.h"

namespace kf {
namespace {

const char kBundleName[] = "kf.fusion.bundle";

}  // namespace

Fuser::Fuser(Engine* engine, const FusionOptions& opts)
    : engine_(engine),
      opts_(opts),
      open_(static_cast<size_t>(engine->size())),
      open_frames_(static_cast<size_t>(engine->size()), 0),
      next_seq_(static_cast<size_t>(engine->size()), 0) {}

Fuser::~Fuser() {
  close();
}

void Fuser::close() {
  std::vector<InFlight> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    flush_locked();
    stop_ = true;
    left.swap(in_flight_);
  }
  timer_cv_.notify_all();
  if (timer_.joinable()) timer_.join();
  // Their bytes must stay until the transports are done with them (a
  // shared-memory send is written by the threads that wait on it).
  for (auto& f : left) {
    if (f.send->done()) continue;
    Status st = f.peers->wait(f.send);
    (void)st;  // a failed send broke the communicator; the peers' operations fail
  }
}

uint64_t Fuser::append(int peer, const FrameHeader& h, const void* payload) {
  const uint64_t need = kFrameHeaderBytes + h.length;
  bool start_timer = false;
  uint64_t ticket;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<char>& b = open_[static_cast<size_t>(peer)];
    if (!b.empty() && b.size() + need > opts_.max_bytes) send_locked(peer);
    // The ticket after that send: it must not count this frame as sent.
    ticket = ++tickets_;
    if (b.empty() && b.capacity() < opts_.max_bytes) b.reserve(opts_.max_bytes);
    bundle_append(&b, h, payload);
    ++open_frames_[static_cast<size_t>(peer)];
    last_append_ns_ = now_ns();
    if (b.size() >= opts_.max_bytes) send_locked(peer);
    if (oldest_ns_ == 0 && any_open_locked()) {
      oldest_ns_ = last_append_ns_;
      // A lingering timer ticks every cycle and will see it: only one
      // asleep without end needs a wake-up (a context switch).
      start_timer = !timer_.joinable() || timer_sleeping_;
    }
    if (start_timer && !timer_.joinable() && !stop_) {
      timer_ = std::thread([this] { timer_loop(); });
    }
  }
  if (start_timer) timer_cv_.notify_one();
  return ticket;
}

void Fuser::flush_through(uint64_t ticket) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (ticket <= flushed_through_) return;
  }
  flush();
}

uint64_t Fuser::last_ticket() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tickets_;
}

void Fuser::wake() {
  // (Only shared memory needs the timer to drive it.)
  if (engine_->shm() == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!timer_sleeping_) return;
  }
  timer_cv_.notify_one();
}

void Fuser::flush() {
  std::lock_guard<std::mutex> lock(mu_);
  flush_locked();
}

void Fuser::flush_locked() {
  if (oldest_ns_ != 0) {
    for (size_t p = 0; p < open_.size(); ++p) {
      if (!open_[p].empty()) send_locked(static_cast<int>(p));
    }
    oldest_ns_ = 0;
  }
  flushed_through_ = tickets_;
}

Fuser::Stats Fuser::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

// Sends peer's bundle as one frame. The send is posted under the lock, so
// bundles to one peer leave in the order they were made.
void Fuser::send_locked(int peer) {
  reap_locked();
  InFlight f;
  f.bytes.reset(new std::vector<char>());
  f.bytes->swap(open_[static_cast<size_t>(peer)]);
  const uint64_t seq = next_seq_[static_cast<size_t>(peer)]++;
  static const uint64_t name_hash = hash_name(kBundleName, sizeof(kBundleName) - 1);
  // Bounded even when operations have no timeout: ~Fuser waits on it.
  const int64_t timeout = engine_->timeout_ms();
  f.peers.reset(new OpPeers(engine_, kBundleName, name_hash, seq, 0,
                            Deadline::after_ms(timeout < 0 ? kTeardownMs : timeout)));
  f.send = f.peers->isend(peer, Tag{0, kBundleStep}, f.bytes->data(), f.bytes->size());
  stats_.bundles += 1;
  stats_.frames += open_frames_[static_cast<size_t>(peer)];
  open_frames_[static_cast<size_t>(peer)] = 0;
  in_flight_.push_back(std::move(f));
  if (!any_open_locked()) {
    oldest_ns_ = 0;
    flushed_through_ = tickets_;
  }
}

bool Fuser::any_open_locked() const {
  for (const auto& b : open_) {
    if (!b.empty()) return true;
  }
  return false;
}

// Frees the bundles whose sends completed.
void Fuser::reap_locked() {
  size_t kept = 0;
  for (auto& f : in_flight_) {
    if (!f.send->done()) in_flight_[kept++] = std::move(f);
  }
  in_flight_.resize(kept);
}

void Fuser::timer_loop() {
  std::unique_lock<std::mutex> lock(mu_);
  // One cycle, at least floor_us.
  auto tick = [&](int64_t floor_us) {
    timer_cv_.wait_for(lock,
                       std::chrono::microseconds(std::max<int64_t>(opts_.cycle_us, floor_us)));
  };
  while (!stop_) {
    reap_locked();
    if (oldest_ns_ != 0) {
      // Frames held: they leave when the oldest has waited a cycle.
      const int64_t due = oldest_ns_ + opts_.cycle_us * 1000;
      const int64_t now = now_ns();
      if (now < due) {
        timer_cv_.wait_for(lock, std::chrono::nanoseconds(due - now));
      } else {
        flush_locked();
      }
      continue;
    }
    // Nothing held. Shared memory moves only when a thread drives the rings,
    // and none may: for bundles of ours still queued there, and for fused
    // operations that wait for data while no thread helps (completion by
    // callback), the timer drives them once per cycle.
    ShmTransport* shm = engine_->shm();
    const bool driving =
        shm != nullptr && (!in_flight_.empty() || (opts_.undriven && opts_.undriven()));
    if (driving) {
      lock.unlock();
      shm->progress();
      lock.lock();
      reap_locked();
    }
    if (!in_flight_.empty()) {
      tick(100);
      continue;
    }
    // While frames came recently, tick once per cycle so that the next
    // frame needs no wake-up; then sleep without end (an idle communicator
    // costs no CPU).
    if (driving || now_ns() - last_append_ns_ < kLingerNs) {
      tick(1);
      continue;
    }
    timer_sleeping_ = true;
    timer_cv_.wait(lock);
    timer_sleeping_ = false;
  }
}

}  // namespace kf
