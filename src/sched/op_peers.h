// OpPeers: the Peers view of one running operation. It stamps every message
// with the operation's name hash, sequence number and signature, applies the
// operation deadline, and remembers its transfers so a failed operation can
// withdraw them.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "algo/peers.h"
#include "base/deadline.h"
#include "transport/shm/shm_transport.h"
#include "transport/tcp/tcp_transport.h"
#include "transport/transfer.h"

namespace kf {

class Engine;
class Fuser;

class OpPeers : public Peers {
 public:
  OpPeers(Engine* engine, std::string name, uint64_t name_hash, uint64_t seq, uint32_t signature,
          const Deadline& deadline);

  int rank() const override;
  int size() const override;
  TransferHandle isend(int peer, Tag tag, const void* buf, size_t len) override;
  TransferHandle irecv(int peer, Tag tag, void* buf, size_t len) override;
  Status wait(const TransferHandle& t) override;
  bool test(const TransferHandle& t, Status* st) override;

  // Withdraws every transfer that has not finished (after a failure).
  void withdraw_outstanding(const Status& why);

  // For asynchronous operations: `watch` is polled while wait() blocks (every
  // few milliseconds); a non-OK result ends the wait with it, so an operation
  // that failed elsewhere (signature mismatch, stall timeout) stops waiting
  // for data that will never come. `display_seq` is the sequence number
  // shown in error texts (the wire sequence also holds the partition).
  void set_watch(std::function<Status()> watch) { watch_ = std::move(watch); }
  void set_display(uint64_t display_seq, std::string suffix) {
    display_seq_ = display_seq;
    display_suffix_ = std::move(suffix);
  }
  // Operation fusion (sched/fusion.h): sends to other ranks are appended to
  // `fuser`'s bundles (their payload copied: the send completes at once)
  // instead of going to a transport.
  void set_fuser(Fuser* fuser) { fuser_ = fuser; }
  // Sends over TCP may wait for the next frame to the same peer or the next
  // Engine::flush_held() (TcpTransport::send with hold): for a small frame
  // that the sender's own traffic follows at once.
  void set_hold_sends(bool hold) { hold_ = hold; }
  // Every receive posted from now on calls `listener` when it completes
  // (Transfer::set_listener: short, no mailbox or transport calls).
  void set_recv_listener(std::function<void()> listener) { recv_listener_ = std::move(listener); }
  // The same for every send posted from now on.
  void set_send_listener(std::function<void()> listener) { send_listener_ = std::move(listener); }

 private:
  MessageKey key(int peer, Tag tag) const;
  Status failed(const TransferHandle& t, Status st);
  std::string silence_note(int waited_on) const;
  struct Route {
    ShmTransport* shm = nullptr;
    TcpTransport* tcp = nullptr;
    void send(const TransferHandle& t, const FrameHeader& h, bool hold) {
      if (shm != nullptr) {
        shm->send(t, h);
      } else {
        tcp->send(t, h, hold);
      }
    }
  };
  Route route(int peer);

  Engine* const engine_;
  const std::string name_;
  const uint64_t name_hash_;
  const uint64_t seq_;
  const uint32_t signature_;
  const Deadline deadline_;
  std::vector<TransferHandle> transfers_;
  std::function<Status()> watch_;
  Fuser* fuser_ = nullptr;
  bool hold_ = false;
  std::function<void()> recv_listener_;
  std::function<void()> send_listener_;
  uint64_t display_seq_;
  std::string display_suffix_;
};

}  // namespace kf
