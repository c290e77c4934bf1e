#include "algo/common.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace kf {

size_t chunk_elems(const AlgoOptions& o, size_t esize) {
  if (esize == 0) return 1;
  return std::max<size_t>(1, o.chunk_bytes / esize);
}

Range balanced_piece(size_t total, size_t n, size_t p) {
  const size_t base = total / n;
  const size_t extra = total % n;
  Range r;
  r.begin = p * base + std::min(p, extra);
  r.len = base + (p < extra ? 1 : 0);
  return r;
}

namespace {
size_t chunks_for(size_t max_len, size_t chunk) {
  return std::max<size_t>(1, (max_len + chunk - 1) / chunk);
}
}  // namespace

Layout Layout::balanced(size_t count, int n, size_t chunk) {
  Layout l;
  const size_t un = static_cast<size_t>(n);
  l.segs_.reserve(un);
  for (size_t s = 0; s < un; ++s) l.segs_.push_back(balanced_piece(count, un, s));
  l.chunks_ = balanced_chunks(count, n, chunk);
  return l;
}

size_t Layout::balanced_chunks(size_t count, int n, size_t chunk) {
  // The first segment is the longest of a balanced split.
  return chunks_for(n > 0 ? balanced_piece(count, static_cast<size_t>(n), 0).len : 0, chunk);
}

Layout Layout::blocks(size_t block, int n, size_t chunk) {
  Layout l;
  const size_t un = static_cast<size_t>(n);
  l.segs_.reserve(un);
  for (size_t s = 0; s < un; ++s) l.segs_.push_back(Range{s * block, block});
  l.chunks_ = chunks_for(block, chunk);
  return l;
}

Layout Layout::custom(std::vector<Range> segs, size_t chunk) {
  Layout l;
  l.segs_ = std::move(segs);
  size_t longest = 0;
  for (const Range& s : l.segs_) longest = std::max(longest, s.len);
  l.chunks_ = chunks_for(longest, chunk);
  return l;
}

Range Layout::chunk(int s, size_t k) const {
  const Range seg = segs_[static_cast<size_t>(s)];
  Range c = balanced_piece(seg.len, chunks_, k);
  c.begin += seg.begin;
  return c;
}

size_t Layout::max_chunk() const {
  size_t m = 0;
  for (const Range& s : segs_) m = std::max(m, (s.len + chunks_ - 1) / chunks_);
  return m;
}

Status wait_all(Peers& p, std::vector<TransferHandle>& ts) {
  for (const TransferHandle& t : ts) {
    if (!t) continue;
    Status st = p.wait(t);
    if (!st.is_ok()) return st;
  }
  ts.clear();
  return Status::ok();
}

void post_chunked_send(Peers& p, int peer, int step, const void* buf, size_t count, size_t esize,
                       size_t chunk, std::vector<TransferHandle>& out) {
  for (size_t k = 0, off = 0; off < count; ++k, off += chunk) {
    const size_t n = std::min(chunk, count - off);
    out.push_back(p.isend(peer, make_tag(k, step), byte_ptr(buf, off, esize), n * esize));
  }
}

void post_chunked_recv(Peers& p, int peer, int step, void* buf, size_t count, size_t esize,
                       size_t chunk, std::vector<TransferHandle>& out) {
  for (size_t k = 0, off = 0; off < count; ++k, off += chunk) {
    const size_t n = std::min(chunk, count - off);
    out.push_back(p.irecv(peer, make_tag(k, step), byte_ptr(buf, off, esize), n * esize));
  }
}

void copy_elems(void* dst, const void* src, size_t count, size_t esize) {
  if (count == 0 || dst == src) return;
  std::memcpy(dst, src, count * esize);
}

}  // namespace kf
