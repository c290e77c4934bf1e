// The framing shared by every byte-stream transport (TCP sockets, shared-
// memory rings): a send queue that writes whole frames through a ByteSink,
// and a reader that parses frames from a ByteSource and hands their payloads
// to the Mailbox. Neither is thread safe: each connection guards its own.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "transport/frame.h"
#include "transport/mailbox.h"
#include "transport/transfer.h"

namespace kf {

class ByteSink {
 public:
  virtual ~ByteSink() = default;
  // Writes a prefix of the iovecs. *written = 0 means "full, try later".
  virtual Status write_some(const iovec* iov, int iovcnt, size_t* written) = 0;
};

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Reads up to `cap` bytes. *got = 0 means "nothing now, try later"; the
  // end of the stream is an error.
  virtual Status read_some(char* dst, size_t cap, size_t* got) = 0;
};

struct SendItem {
  uint8_t header[kFrameHeaderBytes];
  const char* data = nullptr;
  size_t len = 0;
  size_t written = 0;             // bytes of header + data already written
  TransferHandle transfer;        // null for control frames
  std::unique_ptr<char[]> owned;  // private copy after a partly written frame was cancelled

  static SendItem control(const FrameHeader& h);
  static SendItem data_frame(const FrameHeader& h, const TransferHandle& t);
};

class SendQueue {
 public:
  void push(SendItem item) { items_.push_back(std::move(item)); }
  bool empty() const { return items_.empty(); }
  size_t size() const { return items_.size(); }
  // Writes as much as the sink takes, completing finished sends. Sets
  // *blocked when the sink filled up before the queue emptied.
  Status flush(ByteSink& sink, bool* blocked);
  // Withdraws the frame of `t`: dropped if not started, else finished from a
  // private copy so the stream stays well formed. Completes t with `why`.
  void cancel(const TransferHandle& t, const Status& why);
  // Fails every queued send with `why` and empties the queue.
  void fail_all(const Status& why);

 private:
  std::deque<SendItem> items_;
};

class FrameReader {
 public:
  struct Hooks {
    std::function<void()> on_bye;           // the peer destroyed its communicator
    std::function<void(int lost)> on_abort; // the peer reports rank `lost` as gone
  };

  FrameReader(int peer, uint32_t epoch, Mailbox* mailbox, Hooks hooks);

  // Reads and dispatches frames until the source has nothing more, or the
  // mailbox is full (then paused() is true; call pump again later), or
  // `until` (if not null) is done after a whole frame: a thread that reads
  // for its own transfer stops there, leaving the rest to others.
  Status pump(ByteSource& src, const Transfer* until = nullptr);
  bool paused() const { return state_ == State::kNeedTarget; }

 private:
  enum class State { kHeader, kNeedTarget, kPayload };
  Status on_header();
  Status start_payload();
  Status read_payload(ByteSource& src, size_t* got);
  Status finish();

  const int peer_;
  const uint32_t epoch_;
  Mailbox* const mailbox_;
  const Hooks hooks_;

  State state_ = State::kHeader;
  uint8_t header_bytes_[kFrameHeaderBytes];
  size_t header_got_ = 0;
  FrameHeader header_;
  Mailbox::Incoming incoming_;
  bool discard_ = false;
  size_t payload_got_ = 0;
  std::vector<char> scratch_;  // sink for discarded payload
};

}  // namespace kf
