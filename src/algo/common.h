// Small helpers shared by the algorithm files: element sizes, byte offsets,
// how a buffer is cut into segments and chunks, and waiting on transfers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "algo/collectives.h"
#include "algo/peers.h"
#include "base/dtype.h"
#include "kungfu/types.h"

namespace kf {


// Elements per pipeline chunk: chunk_bytes rounded down to whole elements,
// at least one, so that an element is never split between two messages.
size_t chunk_elems(const AlgoOptions& o, size_t esize);

// The p-th of n balanced pieces of [0, total): pieces differ by at most one
// element and the first (total % n) pieces are the longer ones. Every rank
// computes the same split, so both ends of a message agree on its length.
struct Range {
  size_t begin = 0;
  size_t len = 0;
};
Range balanced_piece(size_t total, size_t n, size_t p);

// n segments, each cut into the same number of chunks (some possibly empty),
// so that every ring step has the same shape on every rank.
class Layout {
 public:
  // Balanced split of `count` elements into n segments.
  static Layout balanced(size_t count, int n, size_t chunk_elems);
  // balanced(count, n, chunk_elems).chunks(), without building the layout.
  static size_t balanced_chunks(size_t count, int n, size_t chunk_elems);
  // n consecutive blocks of `block` elements each.
  static Layout blocks(size_t block, int n, size_t chunk_elems);
  // Given segments (any lengths, possibly empty), each cut into the number
  // of chunks the longest one needs.
  static Layout custom(std::vector<Range> segs, size_t chunk_elems);

  int segments() const { return static_cast<int>(segs_.size()); }
  size_t chunks() const { return chunks_; }
  Range segment(int s) const { return segs_[static_cast<size_t>(s)]; }
  // Chunk k of segment s, in elements from the start of the whole buffer.
  Range chunk(int s, size_t k) const;
  size_t max_chunk() const;

 private:
  std::vector<Range> segs_;
  size_t chunks_ = 1;
};

inline const char* byte_ptr(const void* p, size_t elem, size_t esize) {
  return static_cast<const char*>(p) + elem * esize;
}
inline char* byte_ptr(void* p, size_t elem, size_t esize) {
  return static_cast<char*>(p) + elem * esize;
}

inline int mod(int a, int n) {
  return ((a % n) + n) % n;
}

// A tag's step is 32-bit; our step numbers are small ints.
inline Tag make_tag(size_t chunk, int step) {
  return Tag{static_cast<uint32_t>(chunk), static_cast<uint32_t>(step)};
}

// Waits on every non-null handle in order; returns the first error at once.
// Clears the list on success.
Status wait_all(Peers& p, std::vector<TransferHandle>& ts);

// Posts one message per chunk of [0, count) elements of `buf` (sends or
// receives), with Tag{chunk index, step}. Zero-length chunks are skipped on
// both sides because both compute the same split.
void post_chunked_send(Peers& p, int peer, int step, const void* buf, size_t count, size_t esize,
                       size_t chunk, std::vector<TransferHandle>& out);
void post_chunked_recv(Peers& p, int peer, int step, void* buf, size_t count, size_t esize,
                       size_t chunk, std::vector<TransferHandle>& out);

// memcpy that tolerates count 0 and identical pointers.
void copy_elems(void* dst, const void* src, size_t count, size_t esize);

}  // namespace kf
