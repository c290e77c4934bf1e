// One authenticated TCP connection to a peer: a send queue written by
// whichever thread holds send_mu_, and a frame reader run by whichever
// thread holds reader_mu_ (the transport's progress thread, or a thread
// waiting for a receive from this peer). The socket is the ByteSink and ByteSource of
// the shared framing code (transport/frame_stream.h).
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "transport/frame_stream.h"
#include "transport/socket.h"

namespace kf {

class TcpTransport;

class TcpConn : private ByteSink, private ByteSource {
 public:
  enum class State { kOpen, kDeparted, kLost };

  TcpConn(TcpTransport* owner, int peer, Fd fd, std::string remote);

  int peer() const { return peer_; }
  int fd() const { return fd_.get(); }
  const std::string& remote() const { return remote_; }
  State state() const { return state_.load(); }

  // Queues a frame and writes what the socket takes now; with `hold`, the
  // frame waits for the next write instead (TcpTransport::send).
  void enqueue(SendItem item, bool hold = false);
  // Writes the frames held by enqueue(hold), what the socket takes now;
  // nothing if none is held, or if the progress thread writes this queue
  // (the socket was full: it takes them along).
  void flush_held();
  // Withdraws the send of transfer t (see SendQueue::cancel).
  void cancel(const TransferHandle& t, const Status& why);
  // Progress thread, on EPOLLOUT.
  void on_writable();
  // Reads and dispatches what the socket has. The caller holds
  // reader_mutex(): the progress thread (on EPOLLIN, or to retry a paused
  // receive) or a thread waiting for a receive from this peer (driving).
  // Returns an error when the connection must be dropped.
  // With `until`, stops after the frame that completes it.
  Status on_readable(const Transfer* until = nullptr);
  bool paused() const { return reader_.paused(); }
  // Input the socket no longer reports: a paused frame, or bytes left in
  // the staging buffer by a reader that stopped early. Caller holds reader_mutex().
  bool needs_pump() const { return reader_.paused() || stage_pos_ < stage_end_; }
  std::mutex& reader_mutex() { return reader_mu_; }
  // While a waiting thread drives the reader, epoll does not watch for
  // input (the progress thread would only find the reader busy).
  void set_driven(bool driven);

  // Milliseconds (steady clock) when bytes last arrived from / were last
  // written to this peer: liveness for the transport's pings and for naming
  // a peer that went silent.
  int64_t last_heard_ms() const { return last_heard_ms_.load(std::memory_order_relaxed); }
  int64_t last_sent_ms() const { return last_sent_ms_.load(std::memory_order_relaxed); }
  static int64_t now_ms();

  // Closes the connection and fails what is queued. Returns false if it was already lost.
  bool mark_lost(const Status& why);
  bool send_queue_empty();
  bool peer_said_bye() const { return bye_received_.load(); }
  // Closes after an orderly goodbye; fails what is still queued.
  void close_quietly();
  // Stops epoll reporting a hung-up socket while the reader is paused.
  void detach_while_paused();

 private:
  Status write_some(const iovec* iov, int iovcnt, size_t* written) override;
  Status read_some(char* dst, size_t cap, size_t* got) override;
  void update_events_locked();
  void flush_or_lose();

  TcpTransport* const owner_;
  const int peer_;
  Fd fd_;
  const std::string remote_;
  std::atomic<State> state_{State::kOpen};
  std::atomic<bool> bye_received_{false};
  std::atomic<int64_t> last_heard_ms_;
  std::atomic<int64_t> last_sent_ms_;

  std::mutex send_mu_;
  SendQueue queue_;           // guarded by send_mu_
  bool want_out_ = false;     // guarded by send_mu_
  // enqueue(hold) left frames unwritten. Written under send_mu_; read
  // without it first by flush_held(), so that the progress thread's flush
  // at every turn does not wait for the lock while a thread writes a large
  // frame that took the held ones along already.
  std::atomic<bool> held_{false};
  bool read_paused_ = false;  // guarded by send_mu_
  bool driven_ = false;       // guarded by send_mu_

  // Receive side: whoever holds reader_mu_.
  std::mutex reader_mu_;
  FrameReader reader_;
  std::vector<char> stage_;
  size_t stage_pos_ = 0, stage_end_ = 0;
};

}  // namespace kf
