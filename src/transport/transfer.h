// Transfer: one posted send or receive, completed exactly once by whichever
// thread finishes it (the caller, or a transport's progress thread), and
// waited for by the algorithm that posted it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

#include "algo/peers.h"
#include "base/deadline.h"
#include "base/status.h"

namespace kf {

struct Doorbell;

// Identifies one message within a communicator epoch.
struct MessageKey {
  int peer = 0;  // the other rank: source of a receive, destination of a send
  uint64_t name_hash = 0;
  uint64_t seq = 0;
  uint32_t chunk = 0;
  uint32_t step = 0;

  bool operator==(const MessageKey& o) const {
    return peer == o.peer && name_hash == o.name_hash && seq == o.seq && chunk == o.chunk &&
           step == o.step;
  }
};

struct MessageKeyHash {
  size_t operator()(const MessageKey& k) const {
    uint64_t h = k.name_hash ^ (k.seq * 0x9e3779b97f4a7c15ull);
    h ^= (uint64_t(k.chunk) << 32 | k.step) * 0xc2b2ae3d27d4eb4full;
    h ^= uint64_t(static_cast<uint32_t>(k.peer)) * 0x165667b19e3779f9ull;
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

class Transfer;

// Something that can move a transfer's bytes on the waiting thread itself
// (the TCP transport reading the peer's socket), so that a completion costs
// no hand-off from a progress thread. drive() returns like Transfer::wait.
class WaitDriver {
 public:
  virtual ~WaitDriver() = default;
  virtual Status drive(Transfer& t, const Deadline& deadline) = 0;
};

class Transfer {
 public:
  enum class Kind { kSend, kRecv };

  Transfer(Kind kind, const MessageKey& key, uint32_t signature, void* buf, size_t len)
      : kind_(kind), key_(key), signature_(signature), buf_(buf), len_(len) {}

  Kind kind() const { return kind_; }
  const MessageKey& key() const { return key_; }
  uint32_t signature() const { return signature_; }
  void* buffer() const { return buf_; }
  size_t length() const { return len_; }

  // Marks the transfer finished with `st`. Only the first call has effect.
  // Returns true if this call completed it.
  bool complete(const Status& st);
  bool done() const;
  // Waits until done or until the deadline; then returns the final status,
  // or KF_ERR_TIMEOUT if still pending. Polls for spin_us() first (see
  // set_spin_us), then lets the driver work, if any, else sleeps.
  Status wait(const Deadline& deadline);
  // The plain wait: sleeps on the condition variable, no polling, no driver.
  Status sleep_until_done(const Deadline& deadline);
  Status status() const;

  // Rings `bell` on completion (after waking cv waiters), for waiters that
  // sleep on a doorbell rather than on this transfer. Set before posting.
  void set_bell(Doorbell* bell) { bell_ = bell; }

  // A waiter polls the done flag this long before it sleeps on the
  // condition variable: a transfer that completes on a progress thread
  // within the spin costs no wake-up of the waiter (a futex wake and a
  // context switch, tens of microseconds on a busy host). The transport
  // sets it when posting; 0 (never spin) when ranks outnumber the cores,
  // where polling would take the core from the thread that completes it.
  void set_spin_us(uint32_t us) { spin_us_ = us; }
  uint32_t spin_us() const { return spin_us_; }
  // wait() hands the waiting thread to `driver` after the spin. Set before posting.
  void set_driver(WaitDriver* driver) { driver_ = driver; }

  // Called once, by the call that completes the transfer (after its
  // waiters are woken), for completion-driven work that no thread blocks
  // for. It runs on whatever thread completes the transfer (a progress
  // thread, a thread driving shared memory, a mailbox caller), possibly
  // with mailbox locks held: it must be short and must not call into the
  // mailbox or a transport. Set before posting.
  void set_listener(std::function<void()> listener) { listener_ = std::move(listener); }

  // Serialises writes into a receive buffer with cancellation: the progress
  // thread copies payload only while holding io_mutex() and only when
  // !cancelled(); cancel() takes the same lock, so after it returns nothing
  // touches the caller's buffer again.
  std::mutex& io_mutex() { return io_mu_; }
  bool cancelled() const { return cancelled_; }
  void cancel(const Status& why);

 private:
  const Kind kind_;
  const MessageKey key_;
  const uint32_t signature_;
  void* const buf_;
  const size_t len_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  Status status_;
  std::atomic<bool> done_flag_{false};  // done_, readable without mu_
  uint32_t spin_us_ = 0;
  WaitDriver* driver_ = nullptr;
  std::function<void()> listener_;

  Doorbell* bell_ = nullptr;

  std::mutex io_mu_;
  bool cancelled_ = false;  // guarded by io_mu_
};

}  // namespace kf
