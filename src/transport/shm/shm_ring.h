// A single-producer single-consumer byte ring in shared memory: the
// shared-memory counterpart of a TCP stream. The producer advances `head`,
// the consumer `tail` (both count bytes since the start, so full and empty
// are never confused); each lives on its own cache line.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "transport/frame_stream.h"

namespace kf {

struct alignas(64) RingCursor {
  std::atomic<uint64_t> value{0};
};

struct RingHeader {
  RingCursor head;  // bytes written, by the producer
  RingCursor tail;  // bytes read, by the consumer
};
static_assert(sizeof(RingHeader) == 128, "two cache lines");

// The producer's side. `capacity` must be a power of two.
class RingWriter : public ByteSink {
 public:
  RingWriter(RingHeader* h, char* data, size_t capacity) : h_(h), data_(data), cap_(capacity) {}
  Status write_some(const iovec* iov, int iovcnt, size_t* written) override;
  // Bytes written since the ring was made.
  uint64_t position() const { return h_->head.value.load(std::memory_order_relaxed); }

 private:
  RingHeader* h_;
  char* data_;
  size_t cap_;
};

// The consumer's side.
class RingReader : public ByteSource {
 public:
  RingReader(RingHeader* h, char* data, size_t capacity) : h_(h), data_(data), cap_(capacity) {}
  Status read_some(char* dst, size_t cap, size_t* got) override;
  bool has_data() const {
    return h_->head.value.load(std::memory_order_acquire) !=
           h_->tail.value.load(std::memory_order_relaxed);
  }
  // Bytes read since the ring was made.
  uint64_t position() const { return h_->tail.value.load(std::memory_order_relaxed); }

 private:
  RingHeader* h_;
  char* data_;
  size_t cap_;
};

}  // namespace kf
