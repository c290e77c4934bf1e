#include "transport/shm/shm_ring.h"

#include <algorithm>
#include <cstring>

namespace kf {

Status RingWriter::write_some(const iovec* iov, int iovcnt, size_t* written) {
  const uint64_t head = h_->head.value.load(std::memory_order_relaxed);
  const uint64_t tail = h_->tail.value.load(std::memory_order_acquire);
  size_t room = cap_ - static_cast<size_t>(head - tail);
  uint64_t pos = head;
  for (int i = 0; i < iovcnt && room > 0; ++i) {
    const char* src = static_cast<const char*>(iov[i].iov_base);
    size_t len = std::min(iov[i].iov_len, room);
    room -= len;
    while (len > 0) {
      size_t at = static_cast<size_t>(pos & (cap_ - 1));
      size_t n = std::min(len, cap_ - at);
      std::memcpy(data_ + at, src, n);
      src += n;
      pos += n;
      len -= n;
    }
  }
  h_->head.value.store(pos, std::memory_order_release);
  *written = static_cast<size_t>(pos - head);
  return Status::ok();
}

Status RingReader::read_some(char* dst, size_t cap, size_t* got) {
  const uint64_t head = h_->head.value.load(std::memory_order_acquire);
  const uint64_t tail = h_->tail.value.load(std::memory_order_relaxed);
  size_t len = std::min(cap, static_cast<size_t>(head - tail));
  uint64_t pos = tail;
  size_t left = len;
  while (left > 0) {
    size_t at = static_cast<size_t>(pos & (cap_ - 1));
    size_t n = std::min(left, cap_ - at);
    std::memcpy(dst, data_ + at, n);
    dst += n;
    pos += n;
    left -= n;
  }
  h_->tail.value.store(pos, std::memory_order_release);
  *got = len;
  return Status::ok();
}

}  // namespace kf
