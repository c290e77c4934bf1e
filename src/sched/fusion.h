// Fuser: operation fusion. The frames that small asynchronous operations
// send to one peer (their signature frames and their data, see
// AsyncEngine) are packed into one bundle (transport/bundle.h) and sent as
// one transfer; the receiving mailbox unpacks the bundle into the
// operations' own receive buffers. With the one-shot all_reduce
// (algo/one_shot.h), whose every message is known at submission, N small
// all_reduces submitted close together cost one transfer per peer instead
// of N x (1 + log2 n).
//
// No coordination: each rank packs what it submitted, in its own order, and
// frames stay keyed by (name, sequence, chunk, step), so ranks need not
// agree on what was fused with what.
//
// A bundle leaves when the next frame would take it past max_bytes, at the
// next flush() (AsyncEngine flushes whenever a thread waits for or tests a
// request), or cycle_us after its first frame was appended, whichever comes
// first. The cycle is kept by a timer thread, started on first use: it
// ticks once per cycle while frames came in the last 20 ms (so frames need
// not wake it), and sleeps without end after that.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "sched/op_peers.h"
#include "transport/frame.h"

namespace kf {

class Engine;

struct FusionOptions {
  uint64_t max_bytes = 64 * 1024;  // of one bundle (frames and their headers)
  int64_t cycle_us = 1000;         // longest wait of a frame for others to join it
  // True while fused operations wait for data and no thread drives the
  // shared-memory rings for them: the timer then drives them every cycle.
  // Called by the timer thread under the fuser's lock, which it holds until
  // it sleeps without end: whoever makes it true calls Fuser::wake() after.
  std::function<bool()> undriven;
};

class Fuser {
 public:
  Fuser(Engine* engine, const FusionOptions& opts);
  // Flushes, waits (at most `timeout_ms` of the engine) for the bundles in
  // flight, and stops the timer; nothing is appended afterwards, so a later
  // flush() sends nothing. Idempotent; the destructor calls it.
  void close();
  ~Fuser();

  // Appends a data frame for `peer` (not this rank), copying its payload:
  // the caller's buffer is free on return. Returns the frame's ticket, for
  // flush_through().
  uint64_t append(int peer, const FrameHeader& h, const void* payload);
  // Sends every bundle that holds a frame.
  void flush();
  // Sends every bundle if the frame of `ticket` may still be held. An
  // operation calls it before it completes: its peers may need its frames
  // although it needs nothing more from them.
  void flush_through(uint64_t ticket);
  // The ticket of the latest append (0: none yet).
  uint64_t last_ticket() const;
  // Wakes the timer if it sleeps without end: FusionOptions::undriven may
  // have turned true (nothing else wakes it but an append).
  void wake();

  // Counters, for the timeline and tests.
  struct Stats {
    uint64_t bundles = 0;  // bundles sent
    uint64_t frames = 0;   // frames they carried
  };
  Stats stats() const;

 private:
  struct InFlight {
    std::unique_ptr<std::vector<char>> bytes;
    std::unique_ptr<OpPeers> peers;
    TransferHandle send;
  };
  void send_locked(int peer);
  void flush_locked();
  bool any_open_locked() const;
  void reap_locked();
  void timer_loop();

  Engine* const engine_;
  const FusionOptions opts_;
  mutable std::mutex mu_;
  std::condition_variable timer_cv_;
  std::vector<std::vector<char>> open_;  // by peer: frames not sent yet
  std::vector<uint32_t> open_frames_;    // by peer
  std::vector<uint64_t> next_seq_;       // by peer: sequence of the next bundle
  std::vector<InFlight> in_flight_;
  int64_t oldest_ns_ = 0;  // when the oldest unsent frame was appended; 0: none
  int64_t last_append_ns_ = 0;
  bool timer_sleeping_ = false;  // asleep without end: the next append wakes it
  static constexpr int64_t kLingerNs = 20 * 1000 * 1000;
  static constexpr int64_t kTeardownMs = 10000;
  uint64_t tickets_ = 0;          // frames appended so far
  uint64_t flushed_through_ = 0;  // every frame up to this ticket has been sent
  Stats stats_;
  bool stop_ = false;
  std::thread timer_;
};

}  // namespace kf
