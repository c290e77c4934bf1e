// Mailbox: matches incoming data frames with posted receives, by
// (source, name hash, sequence, chunk, step). A frame that arrives before its
// receive is posted is kept in a bounded unexpected-message store. Shared by
// every transport of a communicator; all methods are thread safe.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "transport/frame.h"
#include "transport/transfer.h"

namespace kf {

class Mailbox {
 public:
  // `limit_bytes` bounds the unexpected store; `on_space` is called (without
  // locks held) when a receive is posted or the store shrinks, so that a
  // transport that paused reading may try again.
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
  // Its payload is fully written to where begin() said.
  void finish(const Incoming& in);

  // Posts a receive. Completes it at once when its message already arrived.
  void post(const TransferHandle& t);
  // Removes a posted receive that will not be waited for (failed operation).
  void cancel(const TransferHandle& t, const Status& why);
  // Delivers a message sent to self, as if it arrived from the network.
  Status deliver_local(int self, const FrameHeader& h, const void* data);
  // Fails every posted receive with `why` (the communicator broke).
  void fail_all(const Status& why);

  size_t unexpected_bytes() const;

  // Sees every frame whose step is >= kControlStepFirst before it is
  // matched; returning true consumes it (it must have no payload). Called
  // on transport threads without locks held. Set before any traffic.
  using ControlHook = std::function<bool(int src, const FrameHeader& h)>;
  void set_control_hook(ControlHook hook) { control_hook_ = std::move(hook); }

 private:
  void fill_from_stash(const TransferHandle& t, Stash& s);
  // Makes a stash for an unexpected message (caller holds mu_).
  Status new_stash_locked(const MessageKey& key, const FrameHeader& h, std::shared_ptr<Stash>* out);

  const size_t limit_bytes_;
  const std::function<void()> on_space_;
  ControlHook control_hook_;
  mutable std::mutex mu_;
  std::unordered_map<MessageKey, TransferHandle, MessageKeyHash> posted_;
  std::unordered_map<MessageKey, std::shared_ptr<Stash>, MessageKeyHash> unexpected_;
  size_t unexpected_bytes_ = 0;
};

// An unexpected message: its payload, and the receive that claimed it while
// it was still arriving.
struct Stash {
  MessageKey key;
  uint32_t signature = 0;
  std::unique_ptr<char[]> data;
  size_t len = 0;
  bool complete = false;
  TransferHandle claimer;
};

}  // namespace kf
