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

// Staging bytes one input of `bytes` takes in a one-shot pass (each starts
// at a 64-byte aligned offset of the staging buffer).
size_t one_shot_footprint(size_t bytes) {
  return (bytes + 63) / 64 * 64;
}

// The elements [begin, begin + len) of the pieces laid end to end, as runs
// within one piece: fn(piece, first element in it, elements, elements of
// the range before the run).
template <typename Fn>
void for_each_run(const ArenaPiece* pieces, size_t npieces, size_t begin, size_t len, Fn&& fn) {
  size_t start = 0, at = 0;  // the piece's first element in the whole; done of the range
  for (size_t i = 0; i < npieces && at < len; start += pieces[i].count, ++i) {
    const size_t end = start + pieces[i].count;
    if (begin + at >= end) continue;
    const size_t first = begin + at - start;
    const size_t take = std::min(len - at, end - start - first);
    fn(pieces[i], first, take, at);
    at += take;
  }
}

// One shot: every rank stages each input at a 64-byte aligned offset of its
// staging buffer, one barrier, every rank reduces each in rank order into its
// output (so every rank gets the same bits).
Status one_shot_all_reduce(SharedArena& a, uint32_t signature, const ArenaPiece* pieces,
                           size_t npieces, kf_dtype_t dtype, kf_op_t op) {
  const size_t es = dtype_size(dtype);
  const int w = a.next_buffer();
  a.publish_signature(w, signature);
  char* mine = a.buffer(a.rank(), w);
  size_t off = 0;
  for (size_t i = 0; i < npieces; ++i) {
    const size_t bytes = pieces[i].count * es;
    // A zero-length call still publishes its signature and meets the others
    // (its buffers may be NULL, which memcpy must not see even for 0 bytes).
    if (bytes > 0) std::memcpy(mine + off, pieces[i].send, bytes);
    off += one_shot_footprint(bytes);
  }
  KF_RETURN_IF_ERROR(a.barrier());
  KF_RETURN_IF_ERROR(check_signatures(a, w, signature));
  off = 0;
  for (size_t i = 0; i < npieces; ++i) {
    const ArenaPiece& p = pieces[i];
    if (p.count > 0) {
      reduce_to(dtype, op, p.recv, a.buffer(0, w) + off, a.buffer(1, w) + off, p.count);
      for (int r = 2; r < a.size(); ++r)
        reduce_into(dtype, op, p.recv, a.buffer(r, w) + off, p.count);
      if (op == KF_AVG) finish_average(dtype, p.recv, p.count, a.size());
    }
    off += one_shot_footprint(p.count * es);
  }
  return Status::ok();
}

// Rank j's share of a round of m elements cut into n shares of at most q.
struct Share {
  size_t begin, len;
};
Share share(size_t m, int n, int j) {
  size_t q = (m + static_cast<size_t>(n) - 1) / static_cast<size_t>(n);
  size_t b = std::min(m, q * static_cast<size_t>(j));
  size_t e = std::min(m, b + q);
  return {b, e - b};
}

// Staged over the pieces laid end to end: rounds and the ranks' shares cut
// that whole, whatever the operations' boundaries (in the lambdas, `x` is
// the piece a run lies in). A round fills one staging buffer; in rank x's
// buffer, slot j holds x's input share for rank j, and slot x the share x
// reduced. Slots are the first round's shares apart in every round, so that
// a shorter last round moves no slot.
// A round k, in buffer w(k):
//   stage(k)         write our input's shares for the others into our slots j;
//   reduce_share(k)  fold the others' staged shares for us into our output
//                    and publish it in our own slot;
//   copy_out(k)      read every other rank's published share into our output.
// Pipelined, one barrier per round plus one: stage(0) | reduce_share(0)
// stage(1) | copy_out(0) reduce_share(1) stage(2) | ... | copy_out(last),
// where | is a barrier. Two buffers suffice: stage(k+2) rewrites buffer
// w(k) after the barrier that follows every reduce_share(k) that read it,
// and only the slots that copy_out(k) does not read; reduce_share(k+2)
// rewrites our own slot after the barrier that follows every copy_out(k).
// Seen from outside, a use of the arena as before: its last round's reads
// end before the next use's first barrier (SharedArena::next_buffer).
// Single copy: nothing is published; copy_out reads the peers' outputs
// (exposed before the first barrier), and one more barrier at the end keeps
// every rank's output still until the peers have read it.
Status staged_all_reduce(SharedArena& a, uint32_t signature, const ArenaPiece* pieces,
                         size_t npieces, kf_dtype_t dtype, kf_op_t op) {
  const int n = a.size();
  const int r = a.rank();
  const size_t es = dtype_size(dtype);
  size_t count = 0;
  for (size_t i = 0; i < npieces; ++i) count += pieces[i].count;
  // Single copy (one operation only: peers read one address of ours): peers
  // read finished shares straight from our output, so we need not publish
  // them in staging. Exposed before the first barrier.
  const bool direct = a.single_copy() && npieces == 1;
  if (direct) a.expose(pieces[0].recv);
  // A full round: n shares of a multiple of 64 bytes each.
  const size_t share_elems =
      std::max<size_t>(1, (a.buffer_bytes() / static_cast<size_t>(n)) / 64 * 64 / es);
  const size_t round_elems = share_elems * static_cast<size_t>(n);
  // The first round's share: no share of a later round is longer.
  const size_t slot_elems = share(std::min(count, round_elems), n, 0).len;
  auto slot = [&](int rank, int w, int j) { return a.buffer(rank, w) + j * slot_elems * es; };

  auto stage = [&](size_t base, size_t m, int w) {
    for (int j = 0; j < n; ++j) {
      if (j == r) continue;
      const Share p = share(m, n, j);
      char* dst = slot(r, w, j);
      for_each_run(pieces, npieces, base + p.begin, p.len,
                   [&](const ArenaPiece& x, size_t first, size_t len, size_t at) {
                     std::memcpy(dst + at * es, static_cast<const char*>(x.send) + first * es,
                                 len * es);
                   });
    }
  };
  auto reduce_share = [&](size_t base, size_t m, int w) {
    const Share own = share(m, n, r);
    char* mine = slot(r, w, r);
    for_each_run(pieces, npieces, base + own.begin, own.len,
                 [&](const ArenaPiece& x, size_t first, size_t len, size_t at) {
                   char* out = static_cast<char*>(x.recv) + first * es;
                   // Start from our own input (read in place; in place it
                   // already is `out`), then fold in the others' staged shares.
                   const char* own_in = static_cast<const char*>(x.send) + first * es;
                   if (own_in != out) std::memcpy(out, own_in, len * es);
                   for (int j = 0; j < n; ++j) {
                     if (j != r) reduce_into(dtype, op, out, slot(j, w, r) + at * es, len);
                   }
                   if (op == KF_AVG) finish_average(dtype, out, len, n);
                   if (!direct) std::memcpy(mine + at * es, out, len * es);  // publish it
                 });
  };
  auto copy_out = [&](size_t base, size_t m, int w) -> Status {
    for (int j = 0; j < n; ++j) {
      if (j == r) continue;
      const Share p = share(m, n, j);
      if (p.len == 0) continue;
      if (direct) {
        char* dst = static_cast<char*>(pieces[0].recv) + (base + p.begin) * es;
        KF_RETURN_IF_ERROR(a.read(j, a.exposed_by(j) + (base + p.begin) * es, dst, p.len * es));
        continue;
      }
      const char* theirs = slot(j, w, j);
      for_each_run(pieces, npieces, base + p.begin, p.len,
                   [&](const ArenaPiece& x, size_t first, size_t len, size_t at) {
                     std::memcpy(static_cast<char*>(x.recv) + first * es, theirs + at * es,
                                 len * es);
                   });
    }
    return Status::ok();
  };

  if (count == 0) return Status::ok();  // (not reached: an empty operation fits one shot)
  size_t due_base = 0, due_m = 0;       // the round whose copy_out is due
  int due_w = -1;
  for (size_t base = 0; base < count; base += round_elems) {
    const size_t m = std::min(round_elems, count - base);
    const int w = a.next_buffer();
    if (base == 0) a.publish_signature(w, signature);
    stage(base, m, w);
    KF_RETURN_IF_ERROR(a.barrier());
    if (base == 0) KF_RETURN_IF_ERROR(check_signatures(a, w, signature));
    if (due_w >= 0) KF_RETURN_IF_ERROR(copy_out(due_base, due_m, due_w));
    reduce_share(base, m, w);
    due_base = base;
    due_m = m;
    due_w = w;
  }
  KF_RETURN_IF_ERROR(a.barrier());
  KF_RETURN_IF_ERROR(copy_out(due_base, due_m, due_w));
  // Peers may still be reading our output: nobody returns (and lets its
  // caller touch the buffer) until everyone is done.
  if (direct) KF_RETURN_IF_ERROR(a.barrier());
  return Status::ok();
}

}  // namespace

Status arena_all_reduce(SharedArena& a, uint32_t signature, const void* send, void* recv,
                        size_t count, kf_dtype_t dtype, kf_op_t op, size_t one_shot_max_bytes) {
  const ArenaPiece whole{send, recv, count};
  return arena_all_reduce_pieces(a, signature, &whole, 1, dtype, op, one_shot_max_bytes);
}

Status arena_all_reduce_pieces(SharedArena& a, uint32_t signature, const ArenaPiece* pieces,
                               size_t npieces, kf_dtype_t dtype, kf_op_t op,
                               size_t one_shot_max_bytes) {
  const size_t es = dtype_size(dtype);
  if (a.size() == 1) {
    for (size_t i = 0; i < npieces; ++i) {
      const ArenaPiece& p = pieces[i];
      if (p.send != p.recv && p.count > 0) std::memcpy(p.recv, p.send, p.count * es);
      if (op == KF_AVG) finish_average(dtype, p.recv, p.count, 1);
    }
    return Status::ok();
  }
  size_t footprint = 0;  // what one shot stages
  for (size_t i = 0; i < npieces; ++i) footprint += one_shot_footprint(pieces[i].count * es);
  // (The buffer is a multiple of 64 bytes: the rounded limit still fits it.)
  if (footprint <= one_shot_footprint(std::min(one_shot_max_bytes, a.buffer_bytes()))) {
    return one_shot_all_reduce(a, signature, pieces, npieces, dtype, op);
  }
  return staged_all_reduce(a, signature, pieces, npieces, dtype, op);
}

}  // namespace kf
