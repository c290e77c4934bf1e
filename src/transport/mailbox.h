// Mailbox: matches incoming data frames with posted receives, by
// (source, name hash, sequence, chunk, step). A frame that arrives before its
// receive is posted is kept in a bounded unexpected-message store. A bundle
// (transport/bundle.h: several frames packed into one) is taken whole and
// then delivered frame by frame, as if each had arrived on its own. Shared
// by every transport of a communicator; all methods are thread safe.
#pragma once

#include <atomic>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "base/latest_keys.h"
#include "transport/frame.h"
#include "transport/transfer.h"

namespace kf {

class Mailbox {
 public:
  // `limit_bytes` bounds the unexpected store; `on_space` is called (without
  // locks held) when a receive is posted or the store shrinks after a
  // begin() said `blocked`, so that a transport that paused reading may try
  // again (and only then: waking a progress thread per receive would cost
  // every message a context switch).
  Mailbox(size_t limit_bytes, std::function<void()> on_space);

  // Where the payload of an incoming frame goes: `target` (a posted
  // receive: write under target->io_mutex()) or `stash` (an unexpected
  // message), unless `blocked` (store full: try again later), `discard` (the
  // frame cannot be delivered: read and drop its payload) or `error` (the
  // stream is unusable: drop the connection).
  struct Incoming {
    bool blocked = false;
    bool discard = false;
    Status error;
    TransferHandle target;
    std::shared_ptr<struct Stash> stash;
  };

  // A data frame's header arrived from `src`.
  Incoming begin(int src, const FrameHeader& h);
  // Its payload is fully written to where begin() said. Fails (KF_ERR_REMOTE:
  // drop the connection) only for a malformed bundle, of which nothing is
  // delivered.
  Status finish(const Incoming& in);

  // Posts a receive. Completes it at once when its message already arrived.
  void post(const TransferHandle& t);
  // Removes a posted receive that will not be waited for (failed operation).
  void cancel(const TransferHandle& t, const Status& why);
  // Delivers a message that is already in memory (sent to self, or unpacked
  // from a bundle from `src`) as if it arrived from the network. Never held
  // back by the store's limit: its bytes have been read already.
  Status deliver(int src, const FrameHeader& h, const void* data);
  // Fails every posted receive with `why` (the communicator broke).
  void fail_all(const Status& why);
  // The messages of an operation that ended here before all of them came (it
  // failed): those kept already are dropped, and those that come later are
  // dropped on arrival, so that nothing waits in the store for a receive
  // that will never be posted. An operation is the messages of `name_hash`
  // whose seq >> `shift` is `op` (`shift` below 64, the same in every call).
  // The latest kForgottenOps operations are remembered.
  void forget(uint64_t name_hash, uint64_t op, unsigned shift);
  // (The mailbox's lock is innermost: no call from it runs a transfer's
  // listeners or the owner's callbacks with it held, so forget() may be
  // called under any other lock.)
  static constexpr size_t kForgottenOps = 1024;

  // `peer` said goodbye: its goodbye is the last frame of its stream, so
  // every message it sent has arrived, and a receive from it that finds no
  // stored message can never complete. Fails such receives, posted now or
  // later, with `why` (at once, not after the operation timeout). Messages
  // already stored are still delivered, so a peer that finished its part
  // fails nothing.
  void peer_departed(int peer, const Status& why);
  // Peers whose messages do not travel on the stream that carries their
  // goodbye (shared memory: bytes may still wait in a ring when the TCP
  // goodbye arrives). Their goodbyes fail nothing; they keep the timeout.
  void set_indirect_peers(std::vector<int> peers);

  size_t unexpected_bytes() const;

  // How receives posted from now on are waited for: polled `spin_us`, then
  // driven by `driver` if not null (Transfer::set_spin_us, set_driver). Set
  // by the transport that completes them; cleared before it goes away.
  void set_recv_wait(uint32_t spin_us, WaitDriver* driver) {
    recv_spin_us_.store(spin_us);
    recv_driver_.store(driver);
  }

  // Sees every frame whose step is >= kControlStepFirst before it is
  // matched; returning true consumes it (it must have no payload). Called
  // on transport threads without locks held. Set before any traffic.
  using ControlHook = std::function<bool(int src, const FrameHeader& h)>;
  void set_control_hook(ControlHook hook) { control_hook_ = std::move(hook); }

 private:
  void fill_from_stash(const TransferHandle& t, Stash& s);
  Incoming begin_bundle(int src, const FrameHeader& h);
  Incoming place_locked(int src, const FrameHeader& h, bool may_block,
                        std::unique_lock<std::mutex>* lock);
  Status finish_bundle(const Stash& bundle);
  // Whether the store is too full for `len` more bytes; if so, notes that a
  // reader is paused (caller holds mu_).
  bool full_locked(uint64_t len);
  // Whether a reader was paused since the last call: on_space_ is then due
  // (caller holds mu_, calls on_space_ after releasing it).
  bool take_blocked_locked();
  // Makes a stash for an unexpected message, or for a bundle (not listed in
  // the store: finish() unpacks it), counted against the limit (caller holds mu_).
  Status new_stash_locked(const MessageKey& key, const FrameHeader& h, std::shared_ptr<Stash>* out);

  const size_t limit_bytes_;
  const std::function<void()> on_space_;
  ControlHook control_hook_;
  mutable std::mutex mu_;
  std::unordered_map<MessageKey, TransferHandle, MessageKeyHash> posted_;
  std::unordered_map<MessageKey, std::shared_ptr<Stash>, MessageKeyHash> unexpected_;
  size_t unexpected_bytes_ = 0;
  bool blocked_ = false;                      // a begin() said blocked since on_space_ last ran
  std::unordered_map<int, Status> departed_;  // peer -> why its receives fail
  // forget(): (name_hash, op), and the same in the order they came.
  std::unordered_set<std::pair<uint64_t, uint64_t>, U64PairHash> forgotten_;
  std::deque<std::pair<uint64_t, uint64_t>> forgotten_order_;
  unsigned forget_shift_ = 0;
  bool forgotten_locked(const MessageKey& key) const;
  std::vector<int> indirect_;
  std::atomic<uint32_t> recv_spin_us_{0};
  std::atomic<WaitDriver*> recv_driver_{nullptr};
};

// An unexpected message: its payload, and the receive that claimed it while
// it was still arriving.
struct Stash {
  MessageKey key;
  uint32_t signature = 0;
  std::unique_ptr<char[]> data;
  size_t len = 0;
  bool complete = false;
  bool bundle = false;  // a bundle: unpacked by finish(), never in the store
  uint32_t epoch = 0;   // of a bundle: its inner frames must carry the same
  TransferHandle claimer;
};

}  // namespace kf
