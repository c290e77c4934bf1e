#include "transport/tcp/tcp_transport.h"

#include <errno.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstring>

#include "base/log.h"
#include "transport/tcp/tcp_conn.h"

namespace kf {
namespace {

// A stranger gets this long to prove itself before we drop it.
constexpr int kHandshakeMs = 3000;
constexpr uint32_t kWakeToken = 0xffffffffu;

}  // namespace

TcpTransport::TcpTransport(const TcpOptions& opts, Mailbox* mailbox, PeerLostFn on_lost)
    : opts_(opts), mailbox_(mailbox), on_lost_(std::move(on_lost)) {
  conns_.resize(static_cast<size_t>(opts.size));
}

TcpTransport::~TcpTransport() { shutdown(Deadline::after_ms(0)); }

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
  tune_data_socket(fd.get(), opts_.socket_buffer_bytes);
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
    tune_data_socket(fd.get(), opts_.socket_buffer_bytes);
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
  progress_ = std::thread([this] { progress_loop(); });
  return Status::ok();
}

void TcpTransport::wake() {
  uint64_t one = 1;
  ssize_t n = ::write(wake_fd_.get(), &one, sizeof(one));
  (void)n;
}

void TcpTransport::progress_loop() {
  epoll_event events[64];
  while (!stopping_.load()) {
    int n = ::epoll_wait(epoll_fd_.get(), events, 64, -1);
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
            if (c && c->paused() && c->state() != TcpConn::State::kLost) {
              Status st = c->on_readable();
              if (!st.is_ok()) lose(*c, st);
            }
          }
        }
        continue;
      }
      TcpConn& c = *conns_[token];
      if (c.state() == TcpConn::State::kLost) continue;
      if (events[i].events & EPOLLOUT) c.on_writable();
      if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
        if (c.paused()) {
          if (events[i].events & (EPOLLHUP | EPOLLERR)) c.detach_while_paused();
          continue;
        }
        Status st = c.on_readable();
        if (!st.is_ok()) {
          if (st.code() == KF_ERR_ABORTED || stopping_.load()) {
            c.close_quietly();  // closed after saying goodbye
          } else {
            lose(c, remote_error("lost rank " + std::to_string(c.peer()) + " (" + c.remote() +
                                 "): " + st.message()));
          }
        }
      }
    }
  }
}

void TcpTransport::lose(TcpConn& c, const Status& why) {
  if (!c.mark_lost(why)) return;
  if (shut_down_.load()) return;
  KF_LOG_WARN(why.message());
  broadcast_abort(c.peer());
  on_lost_(c.peer(), why);
}

void TcpTransport::send(const TransferHandle& t, const FrameHeader& h) {
  conns_[static_cast<size_t>(t->key().peer)]->enqueue(SendItem::data_frame(h, t));
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
  if (progress_.joinable()) {
    // Say goodbye, let the queues drain, and give peers a moment to say goodbye
    // too, so that closing never resets a connection with data still in flight.
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
