// TCP transport: a full mesh of authenticated connections between the ranks
// of one communicator, driven by one epoll progress thread.
//
// Sends are queued per peer and written by the caller when the socket has
// room (no thread hand-off for small messages), else by the progress thread.
// Receives are read into a staging buffer and handed to the Mailbox, which
// puts each payload straight into the posted receive buffer when there is
// one; the reader is the thread that waits for a receive from that peer
// (drive()), else the progress thread. The progress thread blocks in epoll_wait when
// there is nothing to do, so an idle communicator costs no CPU.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "transport/frame.h"
#include "transport/handshake.h"
#include "transport/mailbox.h"
#include "transport/socket.h"
#include "transport/transfer.h"

namespace kf {

struct TcpOptions {
  int rank = 0;
  int size = 1;
  uint32_t epoch = 1;
  JobSecret secret{};
  int socket_buffer_bytes = 0;
  std::string congestion;  // TCP congestion control of data connections; empty = the system's
};

class TcpConn;

class TcpTransport : public WaitDriver {
 public:
  // Called when a peer is lost (its connection broke, or another peer reported
  // it), from the progress thread or a sending thread: `why` names it. The
  // transport has already told the other peers when it detected the loss.
  using PeerLostFn = std::function<void(int peer, const Status& why)>;

  TcpTransport(const TcpOptions& opts, Mailbox* mailbox, PeerLostFn on_lost);
  ~TcpTransport() override;
  TcpTransport(const TcpTransport&) = delete;
  TcpTransport& operator=(const TcpTransport&) = delete;

  // Retries receives that paused because the mailbox was full, and input
  // that a driving waiter left in a staging buffer.
  void retry_paused() {
    retry_paused_.store(true);
    wake();
  }

  // Opens the listening socket on `ip` (any port) and starts accepting.
  Status listen(const std::string& ip);
  // The same with a socket that already listens at `address` ("ip:port"):
  // it was opened before this rank knew its rank (communicator split), and
  // peers that dialled it meanwhile wait in its backlog.
  Status adopt_listener(Fd fd, const std::string& address);
  // "ip:port" that peers dial.
  std::string address() const { return address_; }

  // Dials every lower rank and waits for every higher rank to dial in.
  // `addresses[r]` is rank r's address(). Starts the progress thread.
  Status connect_all(const std::vector<std::string>& addresses, const Deadline& deadline);

  // Queues the data frame of send transfer `t` (payload t->buffer(), t->length()).
  // The transfer completes when the payload is handed to the kernel, or fails.
  // With `hold` (a small frame that the sender's own frames to the same
  // peer follow at once), it is not written now: it leaves with the next
  // frame written to that peer or at the next flush_held(), so one system
  // call and one wake-up of the peer carry both. The holder must make sure
  // that a running thread calls flush_held() before it sleeps (src/sched: a
  // start frame is flushed by the thread that runs its partition, at its
  // first OpPeers::wait or at its end); the progress thread calls it too at
  // every turn, at the latest every kPingMs.
  void send(const TransferHandle& t, const FrameHeader& h, bool hold = false);
  // Work that transfer completions queued for later (their listeners may
  // not call into a transport: sched/async_event.h). The progress thread
  // calls `hook` before each sleep (so after each round of reads and
  // writes), and a thread that drives a receive (drive()) before each poll
  // of its socket and after its reads; possibly on two threads at once.
  // The progress thread holds no lock of the transport then; a driving
  // thread holds its socket's reader lock, which the transport only ever
  // tries (the hook may call any function of the transport; the socket is
  // not read meanwhile).
  // Replaces the previous hook (empty: none) and returns once no call of
  // the previous one runs any more. One atomic load per round when none is
  // set.
  void set_progress_hook(std::function<void()> hook);
  // True on a thread that calls the hook before it next sleeps: the
  // progress thread, and a driving thread while it reads. A completion
  // there needs no wake-up of the progress thread.
  static bool hook_follows();
  // Makes the progress thread run the hook soon: wakes it if it sleeps (or
  // is about to), else it runs the hook before it next sleeps anyway.
  void wake_progress();
  // Writes the frames held by send(hold); cheap when there are none.
  void flush_held() {
    if (held_.load(std::memory_order_acquire)) flush_held_slow();
  }
  // Withdraws a send of a failed operation: afterwards the caller's buffer is
  // not read again (a partly written frame is finished from a private copy).
  void cancel_send(const TransferHandle& t, const Status& why);

  // Tells every live peer that `lost` is gone (an abort frame).
  void broadcast_abort(int lost);

  // WaitDriver: a thread waiting for a receive from a peer reads that
  // peer's socket itself while no other thread does (poll(2) on it, in
  // short slices so that a failure completing the transfer elsewhere is
  // seen), instead of sleeping until the progress thread hands it over.
  Status drive(Transfer& t, const Deadline& deadline) override;

  // Names a peer that has gone silent (nothing heard for several ping
  // intervals, though an idle link carries a ping every kPingMs: its
  // process is stopped or hung), for the text of an error that waited on
  // `waited_on` (-1: none). Empty when every peer was heard from recently.
  std::string silence_note(int waited_on) const;

  // Says goodbye to every peer, flushes what is queued and closes, waiting at
  // most until the deadline. Idempotent.
  void shutdown(const Deadline& deadline);

 private:
  friend class TcpConn;

  void accept_loop();
  Status admit(Fd fd, const std::string& from, const Deadline& deadline);
  void progress_loop();
  void wake();
  void lose(TcpConn& c, const Status& why);
  // Remembers the first peer known lost (detected here or reported by a
  // peer): the goodbye repeats it (see shutdown).
  void note_lost(int peer) {
    int none = -1;
    first_lost_.compare_exchange_strong(none, peer);
  }
  // A read of c failed: a closed stream after goodbye, else a lost peer.
  void on_read_error(TcpConn& c, const Status& st);
  void update_events(TcpConn& c);
  // Progress thread: pings every open peer that we sent nothing to lately.
  void ping_idle_links();
  void flush_held_slow();
  void run_progress_hook();
  // Sets the polling time of waiters (KF_TCP_SPIN_US, 0 when oversubscribed).
  void choose_spin(const std::vector<std::string>& addresses);

  const TcpOptions opts_;
  Mailbox* const mailbox_;
  const PeerLostFn on_lost_;

  Fd listen_fd_;
  Fd epoll_fd_;
  Fd wake_fd_;         // eventfd: wakes the progress thread
  Fd accept_stop_fd_;  // eventfd: stops the acceptor thread
  std::string address_;

  std::vector<std::unique_ptr<TcpConn>> conns_;  // indexed by rank; conns_[rank] is null
  std::mutex setup_mu_;
  std::condition_variable setup_cv_;
  int accepted_ = 0;

  std::thread acceptor_;
  std::thread progress_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> retry_paused_{false};
  std::atomic<bool> held_{false};  // some connection may hold frames (send with hold)
  std::atomic<bool> shut_down_{false};
  std::shared_mutex hook_mu_;    // shared while the hook runs
  std::function<void()> hook_;  // guarded by hook_mu_
  std::atomic<bool> has_hook_{false};
  std::atomic<bool> sleeping_{false};  // the progress thread is in (or entering) epoll_wait
  std::atomic<int> first_lost_{-1};
  uint32_t spin_us_ = 0;  // Transfer::set_spin_us of sends and receives; set in connect_all
};

}  // namespace kf
