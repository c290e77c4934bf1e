// One authenticated TCP connection to a peer: its send queue (written by
// whichever thread holds send_mu) and its receive state machine (run only by
// the transport's progress thread).
#pragma once

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "transport/frame.h"
#include "transport/mailbox.h"
#include "transport/socket.h"
#include "transport/transfer.h"

namespace kf {

class TcpTransport;

struct SendItem {
  uint8_t header[kFrameHeaderBytes];
  const char* data = nullptr;
  size_t len = 0;
  size_t written = 0;  // bytes of header + data already handed to the kernel
  TransferHandle transfer;        // null for control frames
  std::unique_ptr<char[]> owned;  // private copy after cancel_send of a partly sent frame
};

class TcpConn {
 public:
  enum class State { kOpen, kDeparted, kLost };

  TcpConn(TcpTransport* owner, int peer, Fd fd, std::string remote);

  int peer() const { return peer_; }
  int fd() const { return fd_.get(); }
  const std::string& remote() const { return remote_; }
  State state() const { return state_.load(); }

  // Queues a frame and writes what the socket takes now.
  void enqueue(SendItem item);
  // Withdraws the item of transfer t (see TcpTransport::cancel_send).
  void cancel(const TransferHandle& t, const Status& why);
  // Progress thread, on EPOLLOUT.
  void on_writable();
  // Progress thread, on EPOLLIN. Returns an error when the connection must be dropped.
  Status on_readable();
  // Progress thread: retry a receive paused for lack of mailbox space.
  bool paused() const { return recv_state_ == RecvState::kNeedTarget; }

  // Closes the connection and fails what is queued. Returns false if it was already lost.
  bool mark_lost(const Status& why);
  bool send_queue_empty();
  bool peer_said_bye() const { return bye_received_.load(); }
  // Closes after an orderly goodbye.
  void close_quietly();

 private:
  enum class RecvState { kHeader, kNeedTarget, kPayload };

  Status flush_locked();
  void update_events_locked();
  Status start_frame();
  void write_payload(const char* src, size_t n);
  void finish_frame();

  TcpTransport* const owner_;
  const int peer_;
  Fd fd_;
  const std::string remote_;
  std::atomic<State> state_{State::kOpen};
  std::atomic<bool> bye_received_{false};

  std::mutex send_mu_;
  std::deque<SendItem> queue_;  // guarded by send_mu_
  bool want_out_ = false;       // guarded by send_mu_
  bool read_paused_ = false;    // guarded by send_mu_

  // Receive state: progress thread only.
  RecvState recv_state_ = RecvState::kHeader;
  std::vector<char> stage_;
  size_t stage_pos_ = 0, stage_end_ = 0;
  uint8_t header_bytes_[kFrameHeaderBytes];
  size_t header_got_ = 0;
  FrameHeader header_;
  Mailbox::Incoming incoming_;
  bool discard_ = false;
  size_t payload_got_ = 0;
};

}  // namespace kf
