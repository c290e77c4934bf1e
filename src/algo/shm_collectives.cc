#include "algo/shm_collectives.h"

#include <algorithm>
#include <cstring>

#include "algo/reduce_kernels.h"
#include "base/dtype.h"

namespace kf {
namespace {

// After the first barrier of an operation: did every rank call it alike?
Status check_signatures(SharedArena& a, int which, uint32_t signature) {
  for (int r = 0; r < a.size(); ++r) {
    if (a.signature_of(r, which) != signature) {
      return invalid_usage("all_reduce: rank " + std::to_string(r) +
                           " called it with a different count, dtype or op");
    }
  }
  return Status::ok();
}

Status one_shot_all_reduce(SharedArena& a, uint32_t signature, const void* send, void* recv,
                           size_t count, kf_dtype_t dtype, kf_op_t op) {
  const int n = a.size();
  const int w = a.next_buffer();
  a.publish_signature(w, signature);
  // A zero-length call still publishes its signature and meets the others
  // (its buffers may be NULL, which memcpy must not see even for 0 bytes).
  if (count > 0) std::memcpy(a.buffer(a.rank(), w), send, count * dtype_size(dtype));
  KF_RETURN_IF_ERROR(a.barrier());
  KF_RETURN_IF_ERROR(check_signatures(a, w, signature));
  // Every rank reduces in rank order, so every rank gets the same bits.
  reduce_to(dtype, op, recv, a.buffer(0, w), a.buffer(1, w), count);
  for (int r = 2; r < n; ++r) reduce_into(dtype, op, recv, a.buffer(r, w), count);
  if (op == KF_AVG) finish_average(dtype, recv, count, n);
  return Status::ok();
}

// Piece j of a round of m elements cut into n pieces of at most q elements.
struct Piece {
  size_t begin, len;
};
Piece piece(size_t m, int n, int j) {
  size_t q = (m + static_cast<size_t>(n) - 1) / static_cast<size_t>(n);
  size_t b = std::min(m, q * static_cast<size_t>(j));
  size_t e = std::min(m, b + q);
  return {b, e - b};
}

Status staged_all_reduce(SharedArena& a, uint32_t signature, const char* send, char* recv,
                         size_t count, kf_dtype_t dtype, kf_op_t op) {
  const int n = a.size();
  const int r = a.rank();
  const size_t es = dtype_size(dtype);
  // Single copy: peers read finished pieces straight from our output, so we
  // need not publish them in staging. Exposed before the first barrier.
  const bool direct = a.single_copy();
  if (direct) a.expose(recv);
  // A round fills one staging buffer: n pieces, each a multiple of 64 bytes.
  const size_t piece_elems = std::max<size_t>(1, (a.buffer_bytes() / static_cast<size_t>(n)) / 64 * 64 / es);
  const size_t round_elems = piece_elems * static_cast<size_t>(n);
  for (size_t base = 0; base < count; base += round_elems) {
    const size_t m = std::min(round_elems, count - base);
    const int w = a.next_buffer();
    if (base == 0) a.publish_signature(w, signature);
    char* mine = a.buffer(r, w);
    // Stage the pieces the other ranks reduce; our own piece is read in place.
    for (int j = 0; j < n; ++j) {
      if (j == r) continue;
      Piece p = piece(m, n, j);
      if (p.len > 0) std::memcpy(mine + p.begin * es, send + (base + p.begin) * es, p.len * es);
    }
    KF_RETURN_IF_ERROR(a.barrier());
    if (base == 0) KF_RETURN_IF_ERROR(check_signatures(a, w, signature));
    Piece own = piece(m, n, r);
    if (own.len > 0) {
      char* out = recv + (base + own.begin) * es;
      const size_t off = own.begin * es;
      // Start from our own input (read in place; in place it already is
      // `out`), then fold in the others' staged pieces.
      const char* own_in = send + (base + own.begin) * es;
      if (own_in != out) std::memcpy(out, own_in, own.len * es);
      for (int j = 0; j < n; ++j) {
        if (j != r) reduce_into(dtype, op, out, a.buffer(j, w) + off, own.len);
      }
      if (op == KF_AVG) finish_average(dtype, out, own.len, n);
      if (!direct) std::memcpy(mine + off, out, own.len * es);  // publish the finished piece
    }
    KF_RETURN_IF_ERROR(a.barrier());
    for (int j = 0; j < n; ++j) {
      if (j == r) continue;
      Piece p = piece(m, n, j);
      if (p.len == 0) continue;
      char* dst = recv + (base + p.begin) * es;
      if (direct) {
        KF_RETURN_IF_ERROR(a.read(j, a.exposed_by(j) + (base + p.begin) * es, dst, p.len * es));
      } else {
        std::memcpy(dst, a.buffer(j, w) + p.begin * es, p.len * es);
      }
    }
  }
  // Peers may still be reading our output: nobody returns (and lets its
  // caller touch the buffer) until everyone is done.
  if (direct) KF_RETURN_IF_ERROR(a.barrier());
  return Status::ok();
}

}  // namespace

Status arena_all_reduce(SharedArena& a, uint32_t signature, const void* send, void* recv,
                        size_t count, kf_dtype_t dtype, kf_op_t op, size_t one_shot_max_bytes) {
  const size_t bytes = count * dtype_size(dtype);
  if (a.size() == 1) {
    if (send != recv && bytes > 0) std::memcpy(recv, send, bytes);
    if (op == KF_AVG) finish_average(dtype, recv, count, 1);
    return Status::ok();
  }
  if (bytes <= std::min(one_shot_max_bytes, a.buffer_bytes())) {
    return one_shot_all_reduce(a, signature, send, recv, count, dtype, op);
  }
  return staged_all_reduce(a, signature, static_cast<const char*>(send), static_cast<char*>(recv),
                           count, dtype, op);
}

Status arena_all_reduce_fused(SharedArena& a, uint32_t signature, const ArenaPiece* pieces,
                              size_t n, kf_dtype_t dtype, kf_op_t op) {
  const size_t es = dtype_size(dtype);
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) total += arena_fused_footprint(pieces[i].count * es);
  if (total > a.buffer_bytes()) {
    return invalid_usage("fused all_reduce: " + std::to_string(total) +
                         " bytes do not fit a staging buffer of " +
                         std::to_string(a.buffer_bytes()));
  }
  if (a.size() == 1) {
    for (size_t i = 0; i < n; ++i) {
      const ArenaPiece& p = pieces[i];
      if (p.send != p.recv && p.count > 0) std::memcpy(p.recv, p.send, p.count * es);
      if (op == KF_AVG) finish_average(dtype, p.recv, p.count, 1);
    }
    return Status::ok();
  }
  const int w = a.next_buffer();
  a.publish_signature(w, signature);
  char* mine = a.buffer(a.rank(), w);
  size_t off = 0;
  for (size_t i = 0; i < n; ++i) {
    const size_t bytes = pieces[i].count * es;
    if (bytes > 0) std::memcpy(mine + off, pieces[i].send, bytes);
    off += arena_fused_footprint(bytes);
  }
  KF_RETURN_IF_ERROR(a.barrier());
  KF_RETURN_IF_ERROR(check_signatures(a, w, signature));
  // As one shot: every rank reduces in rank order (the same bits everywhere).
  off = 0;
  for (size_t i = 0; i < n; ++i) {
    const ArenaPiece& p = pieces[i];
    if (p.count > 0) {
      reduce_to(dtype, op, p.recv, a.buffer(0, w) + off, a.buffer(1, w) + off, p.count);
      for (int r = 2; r < a.size(); ++r)
        reduce_into(dtype, op, p.recv, a.buffer(r, w) + off, p.count);
      if (op == KF_AVG) finish_average(dtype, p.recv, p.count, a.size());
    }
    off += arena_fused_footprint(p.count * es);
  }
  return Status::ok();
}

}  // namespace kf
