#include "transport/tcp/tcp_conn.h"

#include <errno.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "transport/tcp/tcp_transport.h"

namespace kf {
namespace {

// Small reads go through a staging buffer (one recv for many small frames);
// larger ones go straight into their destination.
constexpr size_t kStageBytes = 256 * 1024;
constexpr size_t kDirectReadBytes = 64 * 1024;

}  // namespace

TcpConn::TcpConn(TcpTransport* owner, int peer, Fd fd, std::string remote)
    : owner_(owner), peer_(peer), fd_(std::move(fd)), remote_(std::move(remote)),
      last_heard_ms_(now_ms()), last_sent_ms_(now_ms()),
      reader_(peer, owner->opts_.epoch, owner->mailbox_,
              FrameReader::Hooks{
                  [this] {
                    bye_received_.store(true);
                    // Only an open connection departs; a lost one stays lost.
                    State open = State::kOpen;
                    state_.compare_exchange_strong(open, State::kDeparted);
                    // Everything the peer sent has been read: a receive
                    // from it that is still waiting never completes.
                    // It may have left because it timed out on a rank
                    // that went silent: say which.
                    std::string note = owner_->silence_note(-1);
                    owner_->mailbox_->peer_departed(
                        peer_, remote_error("rank " + std::to_string(peer_) +
                                            " closed its communicator" +
                                            (note.empty() ? "" : " (" + note + ")")));
                  },
                  [this](int lost) {
                    owner_->note_lost(lost);
                    owner_->on_lost_(lost, remote_error("rank " + std::to_string(lost) +
                                                        " was lost (reported by rank " +
                                                        std::to_string(peer_) + ")"));
                  }}),
      stage_(kStageBytes) {}

int64_t TcpConn::now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Status TcpConn::write_some(const iovec* iov, int iovcnt, size_t* written) {
  msghdr msg;
  std::memset(&msg, 0, sizeof(msg));
  msg.msg_iov = const_cast<iovec*>(iov);
  msg.msg_iovlen = static_cast<size_t>(iovcnt);
  for (;;) {
    ssize_t w = ::sendmsg(fd_.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w >= 0) {
      *written = static_cast<size_t>(w);
      if (w > 0) last_sent_ms_.store(now_ms(), std::memory_order_relaxed);
      return Status::ok();
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      *written = 0;
      return Status::ok();
    }
    return remote_error(errno_text("send", errno));
  }
}

Status TcpConn::read_some(char* dst, size_t cap, size_t* got) {
  *got = 0;
  if (stage_pos_ < stage_end_) {
    size_t n = std::min(cap, stage_end_ - stage_pos_);
    std::memcpy(dst, stage_.data() + stage_pos_, n);
    stage_pos_ += n;
    *got = n;
    return Status::ok();
  }
  bool direct = cap >= kDirectReadBytes;
  for (;;) {
    ssize_t n = ::recv(fd_.get(), direct ? dst : stage_.data(), direct ? cap : stage_.size(),
                       MSG_DONTWAIT);
    if (n > 0) {
      last_heard_ms_.store(now_ms(), std::memory_order_relaxed);
      if (direct) {
        *got = static_cast<size_t>(n);
      } else {
        stage_pos_ = 0;
        stage_end_ = static_cast<size_t>(n);
        return read_some(dst, cap, got);
      }
      return Status::ok();
    }
    if (n == 0) {
      if (bye_received_.load()) return aborted_error("closed after goodbye");
      return remote_error("connection closed");
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::ok();
    return remote_error(errno_text("recv", errno));
  }
}

void TcpConn::update_events_locked() {
  if (state_.load() == State::kLost) return;
  epoll_event ev;
  std::memset(&ev, 0, sizeof(ev));
  ev.events = (read_paused_ || driven_ ? 0u : uint32_t(EPOLLIN)) |
              (want_out_ ? uint32_t(EPOLLOUT) : 0u);
  ev.data.u32 = static_cast<uint32_t>(peer_);
  ::epoll_ctl(owner_->epoll_fd_.get(), EPOLL_CTL_MOD, fd_.get(), &ev);
}

// Writes what the socket takes (under send_mu_); arms EPOLLOUT for the rest.
void TcpConn::flush_or_lose() {
  Status st;
  {
    std::lock_guard<std::mutex> lock(send_mu_);
    if (state_.load() == State::kLost) return;
    held_.store(false, std::memory_order_relaxed);  // whatever is queued goes now
    bool blocked = false;
    st = queue_.flush(*this, &blocked);
    if (st.is_ok() && blocked != want_out_) {
      want_out_ = blocked;
      update_events_locked();
    }
  }
  if (!st.is_ok()) {
    owner_->lose(*this, remote_error("lost rank " + std::to_string(peer_) + " (" + remote_ +
                                     "): " + st.message()));
  }
}

void TcpConn::enqueue(SendItem item, bool hold) {
  {
    std::lock_guard<std::mutex> lock(send_mu_);
    State s = state_.load();
    // A departed peer still gets control frames (our goodbye), never data.
    if (s == State::kLost || (s == State::kDeparted && item.transfer)) {
      if (item.transfer) {
        item.transfer->complete(remote_error(
            "cannot send to rank " + std::to_string(peer_) +
            (s == State::kLost ? ": its connection is lost" : ": it destroyed its communicator")));
      }
      return;
    }
    queue_.push(std::move(item));
    if (want_out_) return;  // the progress thread writes when the socket has room
    if (hold) {
      held_.store(true, std::memory_order_release);  // the next write takes it along
      return;
    }
  }
  flush_or_lose();
}

void TcpConn::flush_held() {
  // A frame held after this check comes with a later TcpTransport::held_
  // (set after enqueue, by a read-modify-write: whichever sender's write the
  // caller's exchange read, it synchronizes with every earlier one), so
  // the caller's next flush sees it.
  if (!held_.load(std::memory_order_acquire)) return;
  {
    std::lock_guard<std::mutex> lock(send_mu_);
    if (!held_.load(std::memory_order_relaxed)) return;
    held_.store(false, std::memory_order_relaxed);
    if (want_out_) return;  // the progress thread writes the whole queue
  }
  flush_or_lose();  // returns at once on a lost connection
}

void TcpConn::cancel(const TransferHandle& t, const Status& why) {
  std::lock_guard<std::mutex> lock(send_mu_);
  queue_.cancel(t, why);
}

void TcpConn::on_writable() { flush_or_lose(); }

bool TcpConn::send_queue_empty() {
  std::lock_guard<std::mutex> lock(send_mu_);
  return queue_.empty() || state_.load() == State::kLost;
}

bool TcpConn::mark_lost(const Status& why) {
  {
    std::lock_guard<std::mutex> lock(send_mu_);
    if (state_.load() == State::kLost) return false;
    state_.store(State::kLost);
    queue_.fail_all(why);
    ::epoll_ctl(owner_->epoll_fd_.get(), EPOLL_CTL_DEL, fd_.get(), nullptr);
    // shutdown, not close: the progress thread may still hold the descriptor number.
    ::shutdown(fd_.get(), SHUT_RDWR);
  }
  return true;
}

void TcpConn::close_quietly() {
  std::lock_guard<std::mutex> lock(send_mu_);
  if (state_.load() != State::kLost) {
    ::epoll_ctl(owner_->epoll_fd_.get(), EPOLL_CTL_DEL, fd_.get(), nullptr);
    ::shutdown(fd_.get(), SHUT_RDWR);
  }
  state_.store(State::kLost);
  // Nothing queued can reach a peer that left: fail it rather than let its
  // operation wait for the timeout.
  queue_.fail_all(remote_error("rank " + std::to_string(peer_) + " destroyed its communicator"));
}

void TcpConn::detach_while_paused() {
  // A paused reader does not read; a hung-up socket would report EPOLLHUP on
  // every epoll_wait. Leave epoll until the mailbox has room again (the
  // retry path reads without epoll, and finds the end of the stream).
  std::lock_guard<std::mutex> lock(send_mu_);
  if (state_.load() != State::kLost) ::epoll_ctl(owner_->epoll_fd_.get(), EPOLL_CTL_DEL, fd_.get(), nullptr);
}

void TcpConn::set_driven(bool driven) {
  std::lock_guard<std::mutex> lock(send_mu_);
  if (driven_ == driven) return;
  driven_ = driven;
  update_events_locked();
}

Status TcpConn::on_readable(const Transfer* until) {
  bool was_paused = reader_.paused();
  KF_RETURN_IF_ERROR(reader_.pump(*this, until));
  bool now_paused = reader_.paused();
  if (was_paused != now_paused) {
    std::lock_guard<std::mutex> lock(send_mu_);
    read_paused_ = now_paused;
    update_events_locked();
  }
  return Status::ok();
}

}  // namespace kf
