#include "transport/tcp/tcp_conn.h"

#include <errno.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cstring>

#include "base/log.h"
#include "transport/tcp/tcp_transport.h"

namespace kf {
namespace {

constexpr size_t kStageBytes = 256 * 1024;
// Payload remainders at least this large are read straight into their
// destination instead of through the staging buffer.
constexpr size_t kDirectReadBytes = 64 * 1024;
constexpr int kMaxIov = 64;

}  // namespace

TcpConn::TcpConn(TcpTransport* owner, int peer, Fd fd, std::string remote)
    : owner_(owner), peer_(peer), fd_(std::move(fd)), remote_(std::move(remote)),
      stage_(kStageBytes) {}

void TcpConn::update_events_locked() {
  if (state_.load() == State::kLost) return;
  epoll_event ev;
  std::memset(&ev, 0, sizeof(ev));
  ev.events = (read_paused_ ? 0u : uint32_t(EPOLLIN)) | (want_out_ ? uint32_t(EPOLLOUT) : 0u);
  ev.data.u32 = static_cast<uint32_t>(peer_);
  ::epoll_ctl(owner_->epoll_fd_.get(), EPOLL_CTL_MOD, fd_.get(), &ev);
}

Status TcpConn::flush_locked() {
  while (!queue_.empty()) {
    iovec iov[kMaxIov];
    int n = 0;
    for (auto it = queue_.begin(); it != queue_.end() && n + 2 <= kMaxIov; ++it) {
      if (it->written < kFrameHeaderBytes) {
        iov[n++] = {it->header + it->written, kFrameHeaderBytes - it->written};
      }
      size_t off = std::max(it->written, kFrameHeaderBytes) - kFrameHeaderBytes;
      if (off < it->len) iov[n++] = {const_cast<char*>(it->data) + off, it->len - off};
    }
    msghdr msg;
    std::memset(&msg, 0, sizeof(msg));
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(n);
    ssize_t w = ::sendmsg(fd_.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        if (!want_out_) {
          want_out_ = true;
          update_events_locked();
        }
        return Status::ok();
      }
      return remote_error(errno_text("send", errno));
    }
    size_t left = static_cast<size_t>(w);
    while (left > 0) {
      SendItem& item = queue_.front();
      size_t take = std::min(left, kFrameHeaderBytes + item.len - item.written);
      item.written += take;
      left -= take;
      if (item.written == kFrameHeaderBytes + item.len) {
        if (item.transfer) item.transfer->complete(Status::ok());
        queue_.pop_front();
      }
    }
    // Zero-length frames that fit entirely in earlier bytes are popped above;
    // nothing else to do here.
  }
  if (want_out_) {
    want_out_ = false;
    update_events_locked();
  }
  return Status::ok();
}

void TcpConn::enqueue(SendItem item) {
  Status st;
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
    queue_.push_back(std::move(item));
    if (queue_.size() > 1 && want_out_) return;  // the progress thread is writing
    st = flush_locked();
  }
  if (!st.is_ok()) owner_->lose(*this, remote_error("lost rank " + std::to_string(peer_) + " (" + remote_ + "): " + st.message()));
}

void TcpConn::cancel(const TransferHandle& t, const Status& why) {
  std::lock_guard<std::mutex> lock(send_mu_);
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (it->transfer != t) continue;
    if (it->written == 0) {
      queue_.erase(it);
    } else {
      // Part of the frame is on the wire: finish it from a private copy so the
      // stream stays well-formed and the caller's buffer is free.
      size_t off = std::max(it->written, kFrameHeaderBytes) - kFrameHeaderBytes;
      it->owned.reset(new char[it->len > 0 ? it->len : 1]);
      if (it->len > off) std::memcpy(it->owned.get() + off, it->data + off, it->len - off);
      it->data = it->owned.get();
      it->transfer.reset();
    }
    break;
  }
  t->complete(why);
}

void TcpConn::on_writable() {
  Status st;
  {
    std::lock_guard<std::mutex> lock(send_mu_);
    if (state_.load() == State::kLost) return;
    st = flush_locked();
  }
  if (!st.is_ok()) owner_->lose(*this, remote_error("lost rank " + std::to_string(peer_) + " (" + remote_ + "): " + st.message()));
}

bool TcpConn::send_queue_empty() {
  std::lock_guard<std::mutex> lock(send_mu_);
  return queue_.empty() || state_.load() == State::kLost;
}

bool TcpConn::mark_lost(const Status& why) {
  std::deque<SendItem> failed;
  {
    std::lock_guard<std::mutex> lock(send_mu_);
    if (state_.load() == State::kLost) return false;
    state_.store(State::kLost);
    failed.swap(queue_);
    ::epoll_ctl(owner_->epoll_fd_.get(), EPOLL_CTL_DEL, fd_.get(), nullptr);
    // shutdown, not close: the progress thread may still hold the descriptor number.
    ::shutdown(fd_.get(), SHUT_RDWR);
  }
  for (auto& item : failed) {
    if (item.transfer) item.transfer->complete(why);
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
}

Status TcpConn::start_frame() {
  // A data frame: find where its payload goes.
  incoming_ = owner_->mailbox_->begin(peer_, header_);
  if (incoming_.blocked) {
    recv_state_ = RecvState::kNeedTarget;
    std::lock_guard<std::mutex> lock(send_mu_);
    read_paused_ = true;
    update_events_locked();
    return Status::ok();
  }
  recv_state_ = RecvState::kPayload;
  payload_got_ = 0;
  return Status::ok();
}

void TcpConn::write_payload(const char* src, size_t n) {
  if (discard_) return;
  if (incoming_.target) {
    std::lock_guard<std::mutex> io(incoming_.target->io_mutex());
    if (!incoming_.target->cancelled()) {
      std::memcpy(static_cast<char*>(incoming_.target->buffer()) + payload_got_, src, n);
    }
  } else {
    std::memcpy(incoming_.stash->data.get() + payload_got_, src, n);
  }
}

void TcpConn::finish_frame() {
  if (!discard_) owner_->mailbox_->finish(incoming_);
  incoming_ = Mailbox::Incoming();
  discard_ = false;
  header_got_ = 0;
  payload_got_ = 0;
  recv_state_ = RecvState::kHeader;
}

Status TcpConn::on_readable() {
  if (recv_state_ == RecvState::kNeedTarget) {
    {
      std::lock_guard<std::mutex> lock(send_mu_);
      read_paused_ = false;
      update_events_locked();
    }
    KF_RETURN_IF_ERROR(start_frame());
    if (recv_state_ == RecvState::kNeedTarget) return Status::ok();
  }
  for (;;) {
    if (recv_state_ == RecvState::kPayload && payload_got_ == header_.length) {
      finish_frame();
      continue;
    }
    size_t avail = stage_end_ - stage_pos_;
    if (avail == 0) {
      size_t want = recv_state_ == RecvState::kPayload ? header_.length - payload_got_ : 0;
      if (want >= kDirectReadBytes && !discard_) {
        // Large remainder: read straight into the destination.
        ssize_t n;
        if (incoming_.target) {
          std::lock_guard<std::mutex> io(incoming_.target->io_mutex());
          char* dst = incoming_.target->cancelled()
                          ? stage_.data()
                          : static_cast<char*>(incoming_.target->buffer()) + payload_got_;
          size_t cap = incoming_.target->cancelled() ? std::min(want, stage_.size()) : want;
          n = ::recv(fd_.get(), dst, cap, MSG_DONTWAIT);
        } else {
          n = ::recv(fd_.get(), incoming_.stash->data.get() + payload_got_, want, MSG_DONTWAIT);
        }
        if (n > 0) {
          payload_got_ += static_cast<size_t>(n);
          continue;
        }
        if (n == 0) return remote_error("connection closed");
        if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::ok();
        if (errno == EINTR) continue;
        return remote_error(errno_text("recv", errno));
      }
      ssize_t n = ::recv(fd_.get(), stage_.data(), stage_.size(), MSG_DONTWAIT);
      if (n == 0) {
        if (bye_received_.load()) return aborted_error("closed after goodbye");
        return remote_error("connection closed");
      }
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) return Status::ok();
        if (errno == EINTR) continue;
        return remote_error(errno_text("recv", errno));
      }
      stage_pos_ = 0;
      stage_end_ = static_cast<size_t>(n);
      avail = stage_end_;
    }
    if (recv_state_ == RecvState::kHeader) {
      size_t take = std::min(avail, kFrameHeaderBytes - header_got_);
      std::memcpy(header_bytes_ + header_got_, stage_.data() + stage_pos_, take);
      header_got_ += take;
      stage_pos_ += take;
      if (header_got_ < kFrameHeaderBytes) continue;
      KF_RETURN_IF_ERROR(decode_frame_header(header_bytes_, &header_));
      header_got_ = 0;
      switch (header_.type) {
        case FrameType::kBye:
          bye_received_.store(true);
          state_.store(State::kDeparted);
          continue;
        case FrameType::kAbort:
          owner_->on_lost_(static_cast<int>(header_.step),
                           remote_error("rank " + std::to_string(header_.step) +
                                        " was lost (reported by rank " + std::to_string(peer_) +
                                        ")"));
          continue;
        case FrameType::kData:
          break;
      }
      if (header_.epoch != owner_->opts_.epoch) {
        KF_LOG_WARN("dropping a frame of epoch " + std::to_string(header_.epoch) + " from rank " +
                    std::to_string(peer_));
        discard_ = true;
        recv_state_ = RecvState::kPayload;
        payload_got_ = 0;
        continue;
      }
      KF_RETURN_IF_ERROR(start_frame());
      if (recv_state_ == RecvState::kNeedTarget) return Status::ok();
      continue;
    }
    // kPayload with staged bytes.
    size_t take = std::min(avail, static_cast<size_t>(header_.length - payload_got_));
    write_payload(stage_.data() + stage_pos_, take);
    stage_pos_ += take;
    payload_got_ += take;
  }
}

}  // namespace kf
