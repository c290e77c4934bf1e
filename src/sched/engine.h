// Engine: runs named operations. Every collective, blocking or not, is an
// operation with a name, a signature (kind, count, dtype, op, root digest)
// and a per-name sequence number, so the same name can be reused every step
// and ranks need no coordinator to match operations: frames are keyed by
// (epoch, name hash, sequence, chunk, step).
//
// A blocking call is submit-and-wait on the calling thread: the algorithm
// runs right here, and the transports' progress threads move the bytes.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "algo/collectives.h"
#include "algo/peers.h"
#include "base/status.h"
#include "transport/mailbox.h"
#include "transport/shm/shm_transport.h"
#include "transport/tcp/tcp_transport.h"

namespace kf {

struct EngineOptions {
  int rank = 0;
  int size = 1;
  uint32_t epoch = 1;
  int64_t timeout_ms = 60000;  // per operation; < 0 = never
};

// What every rank must agree on for one operation.
struct OpSignature {
  uint32_t kind = 0;  // which collective
  uint64_t count = 0;
  int32_t dtype = -1;
  int32_t op = -1;
  int32_t root = -1;
  uint32_t digest() const;
};

class Engine {
 public:
  explicit Engine(const EngineOptions& opts);

  Mailbox& mailbox() { return mailbox_; }
  // The transport that carries frames between processes. Set once, before any run().
  void attach(TcpTransport* transport) { transport_.store(transport, std::memory_order_release); }
  // The shared-memory transport to same-host peers, if any. Set once, after
  // attach() and before any operation that should use it.
  void attach_shm(ShmTransport* shm) { shm_.store(shm); }
  ShmTransport* shm() const { return shm_.load(std::memory_order_acquire); }
  TcpTransport* tcp_transport() const { return tcp(); }

  using Body = std::function<Status(Peers&)>;
  // Runs the operation `name` (next sequence number of that name) on the
  // calling thread. On failure, outstanding transfers are withdrawn before
  // returning, so the caller's buffers are free; a remote error or timeout
  // breaks the communicator (later operations fail: see refuse()).
  Status run(const std::string& name, const OpSignature& sig, const Body& body);

  // Why operation `name` cannot start on the broken communicator. The first
  // operation refused before any operation returned the cause of the break
  // gets the cause's code (KF_ERR_REMOTE, KF_ERR_TIMEOUT) and text: a peer's
  // report can break the communicator between two calls of this rank, and
  // the application must learn why, not only that it is aborted. Every
  // later one gets KF_ERR_ABORTED. OK while the communicator works.
  Status refuse(const std::string& name);
  // An operation returned (or will return) the cause of the break to the
  // application: later refusals say KF_ERR_ABORTED.
  void cause_reported();

  // A peer is gone: fail every pending receive and break the communicator.
  void on_peer_lost(int peer, const Status& why);
  // Breaks the communicator (first reason wins): pending and later
  // operations fail. For failures that leave ranks out of step.
  void abort(const Status& why) { break_with(why); }
  // OK while the communicator works; else why it broke.
  Status health() const;
  // Called once (on the thread that breaks it) when the communicator
  // breaks, after pending receives failed. Set before any traffic.
  void set_on_break(std::function<void(const Status&)> f) { on_break_ = std::move(f); }

  int rank() const { return opts_.rank; }
  int size() const { return opts_.size; }
  int64_t timeout_ms() const { return opts_.timeout_ms; }

  // Sends the frames queued to ride along with later ones (OpPeers::
  // set_hold_sends, TcpTransport::send); one atomic load when none is held.
  void flush_held();

 private:
  friend class OpPeers;
  TcpTransport* tcp() const { return transport_.load(std::memory_order_acquire); }
  void break_with(const Status& why);
  uint64_t next_seq(const std::string& name);

  const EngineOptions opts_;
  Mailbox mailbox_;
  // Read by the transports' threads (the mailbox's on_space callback), which
  // start before attach().
  std::atomic<TcpTransport*> transport_{nullptr};
  std::atomic<ShmTransport*> shm_{nullptr};  // read by progress threads

  mutable std::mutex mu_;
  std::unordered_map<std::string, uint64_t> seqs_;  // guarded by mu_
  Status broken_;                                   // guarded by mu_
  bool cause_reported_ = false;                     // guarded by mu_
  std::function<void(const Status&)> on_break_;
};

}  // namespace kf
