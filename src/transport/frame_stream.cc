#include "transport/frame_stream.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "base/log.h"

namespace kf {
namespace {

constexpr int kMaxIov = 64;
constexpr size_t kScratchBytes = 64 * 1024;

}  // namespace

SendItem SendItem::control(const FrameHeader& h) {
  SendItem item;
  encode_frame_header(h, item.header);
  return item;
}

SendItem SendItem::data_frame(const FrameHeader& h, const TransferHandle& t) {
  SendItem item;
  encode_frame_header(h, item.header);
  item.data = static_cast<const char*>(t->buffer());
  item.len = t->length();
  item.transfer = t;
  return item;
}

Status SendQueue::flush(ByteSink& sink, bool* blocked) {
  *blocked = false;
  while (!items_.empty()) {
    iovec iov[kMaxIov];
    int n = 0;
    for (auto it = items_.begin(); it != items_.end() && n + 2 <= kMaxIov; ++it) {
      if (it->written < kFrameHeaderBytes) {
        iov[n++] = {it->header + it->written, kFrameHeaderBytes - it->written};
      }
      size_t off = std::max(it->written, kFrameHeaderBytes) - kFrameHeaderBytes;
      if (off < it->len) iov[n++] = {const_cast<char*>(it->data) + off, it->len - off};
    }
    size_t left = 0;
    KF_RETURN_IF_ERROR(sink.write_some(iov, n, &left));
    if (left == 0) {
      *blocked = true;
      return Status::ok();
    }
    while (left > 0) {
      SendItem& item = items_.front();
      size_t take = std::min(left, kFrameHeaderBytes + item.len - item.written);
      item.written += take;
      left -= take;
      if (item.written == kFrameHeaderBytes + item.len) {
        if (item.transfer) item.transfer->complete(Status::ok());
        items_.pop_front();
      }
    }
  }
  return Status::ok();
}

void SendQueue::cancel(const TransferHandle& t, const Status& why) {
  for (auto it = items_.begin(); it != items_.end(); ++it) {
    if (it->transfer != t) continue;
    if (it->written == 0) {
      items_.erase(it);
    } else {
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

void SendQueue::fail_all(const Status& why) {
  std::deque<SendItem> failed;
  failed.swap(items_);
  for (auto& item : failed) {
    if (item.transfer) item.transfer->complete(why);
  }
}

FrameReader::FrameReader(int peer, uint32_t epoch, Mailbox* mailbox, Hooks hooks)
    : peer_(peer), epoch_(epoch), mailbox_(mailbox), hooks_(std::move(hooks)) {}

Status FrameReader::on_header() {
  KF_RETURN_IF_ERROR(decode_frame_header(header_bytes_, &header_));
  header_got_ = 0;
  switch (header_.type) {
    case FrameType::kBye:
      if (hooks_.on_bye) hooks_.on_bye();
      return Status::ok();
    case FrameType::kAbort:
      if (hooks_.on_abort) hooks_.on_abort(static_cast<int>(header_.step));
      return Status::ok();
    case FrameType::kPing:
      return Status::ok();  // its arrival is all it says
    case FrameType::kData:
      break;
  }
  if (header_.epoch != epoch_) {
    KF_LOG_WARN("dropping a frame of epoch " + std::to_string(header_.epoch) + " from rank " +
                std::to_string(peer_));
    discard_ = true;
    state_ = State::kPayload;
    payload_got_ = 0;
    return Status::ok();
  }
  return start_payload();
}

Status FrameReader::start_payload() {
  incoming_ = mailbox_->begin(peer_, header_);
  if (incoming_.blocked) {
    state_ = State::kNeedTarget;
    return Status::ok();
  }
  KF_RETURN_IF_ERROR(incoming_.error);
  discard_ = incoming_.discard;
  state_ = State::kPayload;
  payload_got_ = 0;
  return Status::ok();
}

Status FrameReader::read_payload(ByteSource& src, size_t* got) {
  size_t want = static_cast<size_t>(header_.length) - payload_got_;
  if (discard_) {
    if (scratch_.empty()) scratch_.resize(kScratchBytes);
    return src.read_some(scratch_.data(), std::min(want, scratch_.size()), got);
  }
  if (incoming_.target) {
    // Hold the transfer's I/O lock while writing into the caller's buffer, so
    // a cancel that returns is never followed by a write.
    std::lock_guard<std::mutex> io(incoming_.target->io_mutex());
    if (incoming_.target->cancelled()) {
      if (scratch_.empty()) scratch_.resize(kScratchBytes);
      return src.read_some(scratch_.data(), std::min(want, scratch_.size()), got);
    }
    return src.read_some(static_cast<char*>(incoming_.target->buffer()) + payload_got_, want, got);
  }
  return src.read_some(incoming_.stash->data.get() + payload_got_, want, got);
}

Status FrameReader::finish() {
  Status st = discard_ ? Status::ok() : mailbox_->finish(incoming_);
  incoming_ = Mailbox::Incoming();
  discard_ = false;
  payload_got_ = 0;
  state_ = State::kHeader;
  return st;
}

Status FrameReader::pump(ByteSource& src, const Transfer* until) {
  if (state_ == State::kNeedTarget) {
    KF_RETURN_IF_ERROR(start_payload());
    if (state_ == State::kNeedTarget) return Status::ok();
  }
  for (;;) {
    if (state_ == State::kPayload) {
      if (payload_got_ == header_.length) {
        KF_RETURN_IF_ERROR(finish());
        if (until != nullptr && until->done()) return Status::ok();
        continue;
      }
      size_t got = 0;
      KF_RETURN_IF_ERROR(read_payload(src, &got));
      if (got == 0) return Status::ok();
      payload_got_ += got;
      continue;
    }
    size_t got = 0;
    KF_RETURN_IF_ERROR(src.read_some(reinterpret_cast<char*>(header_bytes_) + header_got_,
                                     kFrameHeaderBytes - header_got_, &got));
    if (got == 0) return Status::ok();
    header_got_ += got;
    if (header_got_ < kFrameHeaderBytes) continue;
    KF_RETURN_IF_ERROR(on_header());
    if (state_ == State::kNeedTarget) return Status::ok();
  }
}

}  // namespace kf
