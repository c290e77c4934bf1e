#include "transport/tcp/tcp_transport.h"

#include <errno.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <thread>

#include "base/config.h"
#include "base/log.h"
#include "transport/tcp/tcp_conn.h"

namespace kf {
namespace {

// A stranger gets this long to prove itself before we drop it.
constexpr int kHandshakeMs = 3000;
constexpr uint32_t kWakeToken = 0xffffffffu;
// A driving waiter polls its socket at most this long before it looks at
// its transfer again (which may have failed without any byte arriving).
constexpr int kDriveSliceMs = 10;
// Only small receives are driven: there the hand-off from the progress
// thread is most of the latency. A large one is better left to the progress
// thread, which reads it while this thread reduces the previous chunk
// (measured: driving 1 MiB chunks lowered 64 MiB busbw).
constexpr size_t kDriveMaxBytes = 64 * 1024;
// Every link carries some frame at least this often (a ping when idle), so
// that a peer whose process stopped can be told from one that only waits.
// The cost: two wake-ups a second per rank when idle.
constexpr int kPingMs = 500;
// Heard nothing for this long: the peer is silent (stopped, hung, or cut off).
constexpr int64_t kSilentMs = 4 * kPingMs;

// This thread runs the progress hook before it next sleeps (hook_follows()).
thread_local bool t_hook_follows = false;

}  // namespace

TcpTransport::TcpTransport(const TcpOptions& opts, Mailbox* mailbox, PeerLostFn on_lost)
    : opts_(opts), mailbox_(mailbox), on_lost_(std::move(on_lost)) {
  conns_.resize(static_cast<size_t>(opts.size));
}

TcpTransport::~TcpTransport() {
  shutdown(Deadline::after_ms(0));
}

Status TcpTransport::listen(const std::string& ip) {
  uint16_t port = 0;
  Fd fd;
  KF_RETURN_IF_ERROR(listen_tcp(ip, 0, &fd, &port));
  return adopt_listener(std::move(fd), join_host_port(ip, port));
}

Status TcpTransport::adopt_listener(Fd fd, const std::string& address) {
  listen_fd_ = std::move(fd);
  address_ = address;
  epoll_fd_.reset(::epoll_create1(EPOLL_CLOEXEC));
  wake_fd_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  accept_stop_fd_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!epoll_fd_.valid() || !wake_fd_.valid() || !accept_stop_fd_.valid()) {
    return system_error(errno_text("epoll/eventfd", errno));
  }
  epoll_event ev;
  std::memset(&ev, 0, sizeof(ev));
  ev.events = EPOLLIN;
  ev.data.u32 = kWakeToken;
  ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, wake_fd_.get(), &ev);
  acceptor_ = std::thread([this] { accept_loop(); });
  return Status::ok();
}

void TcpTransport::accept_loop() {
  for (;;) {
    Fd fd;
    std::string from;
    Status st = accept_tcp(listen_fd_.get(), accept_stop_fd_.get(), Deadline::never(), &fd, &from);
    if (st.code() == KF_ERR_ABORTED) return;
    if (!st.is_ok()) {
      KF_LOG_WARN("accept failed: " + st.message());
      continue;
    }
    Status a = admit(std::move(fd), from, Deadline::after_ms(kHandshakeMs));
    if (!a.is_ok()) KF_LOG_WARN("rejected a connection from " + from + ": " + a.message());
  }
}

Status TcpTransport::admit(Fd fd, const std::string& from, const Deadline& deadline) {
  HandshakeResult hs;
  KF_RETURN_IF_ERROR(handshake(fd.get(), opts_.secret, ConnKind::kData, Role::kAcceptor,
                               static_cast<uint32_t>(opts_.rank), opts_.epoch, -1, deadline, &hs));
  int peer = static_cast<int>(hs.peer_rank);
  if (hs.peer_epoch != opts_.epoch) return remote_error("peer is in another epoch");
  if (peer <= opts_.rank || peer >= opts_.size) {
    return remote_error("unexpected dial from rank " + std::to_string(peer));
  }
  std::lock_guard<std::mutex> lock(setup_mu_);
  if (conns_[static_cast<size_t>(peer)]) {
    return remote_error("rank " + std::to_string(peer) + " is already connected");
  }
  KF_RETURN_IF_ERROR(tune_data_socket(fd.get(), opts_.socket_buffer_bytes, opts_.congestion));
  KF_RETURN_IF_ERROR(set_nonblocking(fd.get(), true));
  conns_[static_cast<size_t>(peer)] = std::make_unique<TcpConn>(this, peer, std::move(fd), from);
  ++accepted_;
  setup_cv_.notify_all();
  return Status::ok();
}

Status TcpTransport::connect_all(const std::vector<std::string>& addresses,
                                 const Deadline& deadline) {
  for (int peer = 0; peer < opts_.rank; ++peer) {
    std::string host;
    uint16_t port = 0;
    KF_RETURN_IF_ERROR(split_host_port(addresses[static_cast<size_t>(peer)], &host, &port));
    Fd fd;
    KF_RETURN_IF_ERROR(connect_tcp(host, port, deadline, &fd));
    HandshakeResult hs;
    Status st = handshake(fd.get(), opts_.secret, ConnKind::kData, Role::kDialer,
                          static_cast<uint32_t>(opts_.rank), opts_.epoch, peer, deadline, &hs);
    if (!st.is_ok()) {
      return Status(st.code(), "connecting to rank " + std::to_string(peer) + " at " +
                                   addresses[static_cast<size_t>(peer)] + ": " + st.message());
    }
    KF_RETURN_IF_ERROR(tune_data_socket(fd.get(), opts_.socket_buffer_bytes, opts_.congestion));
    KF_RETURN_IF_ERROR(set_nonblocking(fd.get(), true));
    std::lock_guard<std::mutex> lock(setup_mu_);
    conns_[static_cast<size_t>(peer)] =
        std::make_unique<TcpConn>(this, peer, std::move(fd), addresses[static_cast<size_t>(peer)]);
  }
  {
    std::unique_lock<std::mutex> lock(setup_mu_);
    int expected = opts_.size - 1 - opts_.rank;
    bool ok = deadline.is_never()
                  ? (setup_cv_.wait(lock, [&] { return accepted_ == expected; }), true)
                  : setup_cv_.wait_until(lock, deadline.time_point(),
                                         [&] { return accepted_ == expected; });
    if (!ok) {
      std::string missing;
      for (int r = opts_.rank + 1; r < opts_.size; ++r) {
        if (!conns_[static_cast<size_t>(r)]) missing += " " + std::to_string(r);
      }
      return timeout_error("timed out waiting for ranks" + missing + " to connect");
    }
  }
  for (auto& c : conns_) {
    if (!c) continue;
    epoll_event ev;
    std::memset(&ev, 0, sizeof(ev));
    ev.events = EPOLLIN;
    ev.data.u32 = static_cast<uint32_t>(c->peer());
    if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, c->fd(), &ev) != 0) {
      return system_error(errno_text("epoll_ctl", errno));
    }
  }
  choose_spin(addresses);
  progress_ = std::thread([this] { progress_loop(); });
  return Status::ok();
}

void TcpTransport::choose_spin(const std::vector<std::string>& addresses) {
  // Ranks whose address has our host part run on this host (or share its
  // address: the estimate errs towards counting too many, i.e. towards not
  // polling). Polling only pays when every local rank has its own core.
  std::string me, host;
  uint16_t port = 0;
  size_t local = 0;
  if (split_host_port(address_, &me, &port).is_ok()) {
    for (const auto& a : addresses) {
      if (split_host_port(a, &host, &port).is_ok() && host == me) ++local;
    }
  }
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const int64_t us = knob_int(Knob::KF_TCP_SPIN_US);
  spin_us_ = (local <= cores && us > 0) ? static_cast<uint32_t>(std::min<int64_t>(us, 100000)) : 0;
  mailbox_->set_recv_wait(spin_us_, knob_int(Knob::KF_TCP_DRIVE) != 0 ? this : nullptr);
}

void TcpTransport::wake() {
  uint64_t one = 1;
  ssize_t n = ::write(wake_fd_.get(), &one, sizeof(one));
  (void)n;
}

void TcpTransport::progress_loop() {
  t_hook_follows = true;  // it runs the hook before every sleep
  epoll_event events[64];
  int64_t next_ping = TcpConn::now_ms() + kPingMs;
  while (!stopping_.load()) {
    int64_t now = TcpConn::now_ms();
    if (now >= next_ping) {
      ping_idle_links();
      next_ping = now + kPingMs;
    }
    flush_held();  // held frames leave at the latest at this turn
    // The hook runs after the flag is up: work queued before a waker saw
    // the flag down (it wrote no wake-up) is done here (wake_progress()).
    sleeping_.store(true);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    run_progress_hook();
    int n = ::epoll_wait(epoll_fd_.get(), events, 64, static_cast<int>(next_ping - now));
    sleeping_.store(false, std::memory_order_relaxed);
    if (n < 0) {
      if (errno == EINTR) continue;
      KF_LOG_ERROR(errno_text("epoll_wait", errno));
      return;
    }
    for (int i = 0; i < n; ++i) {
      uint32_t token = events[i].data.u32;
      if (token == kWakeToken) {
        uint64_t v;
        ssize_t r = ::read(wake_fd_.get(), &v, sizeof(v));
        (void)r;
        if (retry_paused_.exchange(false)) {
          for (auto& c : conns_) {
            if (!c || c->state() == TcpConn::State::kLost) continue;
            // A driving waiter that holds the reader asks again when done.
            std::unique_lock<std::mutex> rl(c->reader_mutex(), std::try_to_lock);
            if (!rl.owns_lock() || !c->needs_pump()) continue;
            Status st = c->on_readable();
            if (!st.is_ok()) on_read_error(*c, st);
          }
        }
        continue;
      }
      TcpConn& c = *conns_[token];
      if (c.state() == TcpConn::State::kLost) continue;
      if (events[i].events & EPOLLOUT) c.on_writable();
      if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
        // Busy: a waiting thread drives this reader (and epoll stops
        // reporting input once it has said so).
        std::unique_lock<std::mutex> rl(c.reader_mutex(), std::try_to_lock);
        if (!rl.owns_lock()) continue;
        if (c.paused()) {
          if (events[i].events & (EPOLLHUP | EPOLLERR)) c.detach_while_paused();
          continue;
        }
        Status st = c.on_readable();
        if (!st.is_ok()) on_read_error(c, st);
      }
    }
  }
}

void TcpTransport::wake_progress() {
  // Awake, it runs the hook before it next sleeps: no wake-up needed.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (sleeping_.load()) wake();
}

void TcpTransport::set_progress_hook(std::function<void()> hook) {
  std::unique_lock<std::shared_mutex> lock(hook_mu_);
  hook_ = std::move(hook);
  has_hook_.store(static_cast<bool>(hook_), std::memory_order_release);
}

void TcpTransport::run_progress_hook() {
  if (!has_hook_.load(std::memory_order_acquire)) return;
  std::shared_lock<std::shared_mutex> lock(hook_mu_);
  if (hook_) hook_();
}

bool TcpTransport::hook_follows() { return t_hook_follows; }

void TcpTransport::ping_idle_links() {
  FrameHeader ping;
  ping.type = FrameType::kPing;
  ping.epoch = opts_.epoch;
  const int64_t now = TcpConn::now_ms();
  for (auto& c : conns_) {
    if (!c || c->state() != TcpConn::State::kOpen) continue;
    // A full queue already says we are here once the peer reads; a peer
    // that does not read would only collect pings.
    if (now - c->last_sent_ms() < kPingMs || !c->send_queue_empty()) continue;
    c->enqueue(SendItem::control(ping));
  }
}

std::string TcpTransport::silence_note(int waited_on) const {
  if (!progress_.joinable()) return "";
  const int64_t now = TcpConn::now_ms();
  int silent = -1;
  int64_t longest = kSilentMs;
  for (const auto& c : conns_) {
    if (!c || c->state() != TcpConn::State::kOpen) continue;
    const int64_t quiet = now - c->last_heard_ms();
    if (quiet >= longest) {
      longest = quiet;
      silent = c->peer();
    }
  }
  if (silent < 0) return "";
  char secs[32];
  std::snprintf(secs, sizeof(secs), "%.1f", static_cast<double>(longest) / 1000.0);
  std::string note = "rank " + std::to_string(silent) + " has sent nothing for " + secs +
                     " s, not even its liveness pings: it is stopped, hung or cut off";
  if (silent != waited_on && waited_on >= 0 && waited_on < opts_.size &&
      conns_[static_cast<size_t>(waited_on)] &&
      now - conns_[static_cast<size_t>(waited_on)]->last_heard_ms() < kSilentMs) {
    note = "rank " + std::to_string(waited_on) + " still answers (it waits too); " + note;
  }
  return note;
}

void TcpTransport::on_read_error(TcpConn& c, const Status& st) {
  if (st.code() == KF_ERR_ABORTED || stopping_.load()) {
    c.close_quietly();  // closed after saying goodbye
  } else {
    lose(c, remote_error("lost rank " + std::to_string(c.peer()) + " (" + c.remote() +
                         "): " + st.message()));
  }
}

Status TcpTransport::drive(Transfer& t, const Deadline& deadline) {
  const int peer = t.key().peer;
  TcpConn* c = nullptr;
  if (t.kind() == Transfer::Kind::kRecv && t.length() <= kDriveMaxBytes && peer >= 0 &&
      peer < opts_.size && !stopping_.load()) {
    c = conns_[static_cast<size_t>(peer)].get();
  }
  if (c == nullptr || c->state() == TcpConn::State::kLost) return t.sleep_until_done(deadline);
  // One reader at a time: when another thread reads this socket, it
  // completes our transfer too, and we sleep.
  std::unique_lock<std::mutex> rl(c->reader_mutex(), std::try_to_lock);
  if (!rl.owns_lock()) return t.sleep_until_done(deadline);
  // A paused reader waits for room in the mailbox; the progress thread
  // retries it when there is.
  const bool hook_followed = t_hook_follows;
  t_hook_follows = true;  // completions of these reads: the hook below sees them
  if (!c->paused() && !t.done()) {
    c->set_driven(true);
    for (;;) {
      // Stop at our frame: later frames are the progress thread's work,
      // done while this thread goes on with its operation.
      Status st = c->on_readable(&t);
      if (!st.is_ok()) {
        on_read_error(*c, st);
        break;
      }
      if (t.done() || c->paused() || c->state() == TcpConn::State::kLost || deadline.expired() ||
          stopping_.load()) {
        break;
      }
      // Before this thread sleeps: the news of the frames it read (pushed
      // for its hook, not woken for) may be what the peer waits for before
      // it sends ours.
      run_progress_hook();
      pollfd p;
      p.fd = c->fd();
      p.events = POLLIN;
      p.revents = 0;
      ::poll(&p, 1, deadline.remaining_ms(kDriveSliceMs));
    }
    // Still holding the reader: the progress thread cannot find it busy
    // with input re-armed except for this instant.
    c->set_driven(false);
  }
  // Bytes left in the staging buffer raise no epoll event; a retry may
  // also have been asked for while we held the reader.
  const bool leftover = c->needs_pump();
  rl.unlock();
  if (leftover) retry_paused();
  run_progress_hook();  // what this thread's reads completed
  t_hook_follows = hook_followed;
  return t.sleep_until_done(deadline);
}

void TcpTransport::lose(TcpConn& c, const Status& why) {
  if (!c.mark_lost(why)) return;
  if (shut_down_.load()) return;
  KF_LOG_WARN(why.message());
  note_lost(c.peer());
  broadcast_abort(c.peer());
  on_lost_(c.peer(), why);
}

void TcpTransport::send(const TransferHandle& t, const FrameHeader& h, bool hold) {
  t->set_spin_us(spin_us_);
  conns_[static_cast<size_t>(t->key().peer)]->enqueue(SendItem::data_frame(h, t), hold);
  // After the frame is queued: a flush_held() that clears the flag before
  // this write may have missed the frame, one after it sees the flag. A
  // read-modify-write, not a store: so a flusher whose exchange reads a later
  // sender's write also sees this sender's connection flag (the release
  // sequence of this write continues through the later ones).
  if (hold) held_.exchange(true, std::memory_order_release);
}

void TcpTransport::flush_held_slow() {
  if (!held_.exchange(false, std::memory_order_acq_rel)) return;
  for (auto& c : conns_) {
    if (c) c->flush_held();
  }
}

void TcpTransport::cancel_send(const TransferHandle& t, const Status& why) {
  conns_[static_cast<size_t>(t->key().peer)]->cancel(t, why);
}

void TcpTransport::broadcast_abort(int lost) {
  FrameHeader h;
  h.type = FrameType::kAbort;
  h.epoch = opts_.epoch;
  h.step = static_cast<uint32_t>(lost);
  for (auto& c : conns_) {
    if (!c || c->peer() == lost || c->state() != TcpConn::State::kOpen) continue;
    c->enqueue(SendItem::control(h));
  }
}

void TcpTransport::shutdown(const Deadline& deadline) {
  if (shut_down_.load()) return;
  mailbox_->set_recv_wait(0, nullptr);  // receives posted from now on do not come here
  if (progress_.joinable()) {
    // Say goodbye, let the queues drain, and give peers a moment to say goodbye
    // too, so that closing never resets a connection with data still in flight.
    // A rank that leaves because a peer was lost says so first: a survivor
    // that waits on this rank then learns the root cause (in stream order,
    // before the goodbye), not just that this rank left.
    const int lost = first_lost_.load();
    if (lost >= 0) broadcast_abort(lost);
    FrameHeader bye;
    bye.type = FrameType::kBye;
    bye.epoch = opts_.epoch;
    for (auto& c : conns_) {
      if (!c || c->state() == TcpConn::State::kLost) continue;
      c->enqueue(SendItem::control(bye));
    }
    for (;;) {
      bool idle = true;
      for (auto& c : conns_) {
        if (!c || c->state() == TcpConn::State::kLost) continue;
        if (!c->send_queue_empty() || !c->peer_said_bye()) idle = false;
      }
      if (idle || deadline.expired()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  shut_down_.store(true);
  stopping_.store(true);
  if (progress_.joinable()) {
    wake();
    progress_.join();
  }
  if (acceptor_.joinable()) {
    uint64_t one = 1;
    ssize_t n = ::write(accept_stop_fd_.get(), &one, sizeof(one));
    (void)n;
    acceptor_.join();
  }
  for (auto& c : conns_) {
    if (c) c->close_quietly();
  }
}

}  // namespace kf
