// Recursive-doubling all_reduce: log2(size) rounds in which partners swap
// their whole buffers, plus one round before and after when size is not a
// power of two. Chosen for small messages, where latency dominates.
//
// Non-power-of-two fold (as in MPICH): with pof2 the largest power of two
// <= size and rem = size - pof2, each even rank r < 2*rem hands its data to
// r+1 and sits out; the pof2 remaining ranks run the doubling under new
// ranks; then each odd r < 2*rem hands the result back to r-1.
//
// Bitwise agreement: every combination is "lower rank's value op higher
// rank's value", and both partners hold the same two values, so every rank
// computes the same bits even for min/max of signed zeros.
#include <vector>

#include "algo/common.h"
#include "algo/internal.h"
#include "algo/reduce_kernels.h"

namespace kf {
namespace {

// Swaps `count` elements with `peer` under `step`: sends buf, receives tmp.
Status exchange(Peers& p, int peer, int step, void* buf, void* tmp, size_t count, size_t es,
                size_t chunk) {
  std::vector<TransferHandle> ts;
  post_chunked_recv(p, peer, step, tmp, count, es, chunk, ts);
  post_chunked_send(p, peer, step, buf, count, es, chunk, ts);
  return wait_all(p, ts);
}

Status send_all(Peers& p, int peer, int step, const void* buf, size_t count, size_t es,
                size_t chunk) {
  std::vector<TransferHandle> ts;
  post_chunked_send(p, peer, step, buf, count, es, chunk, ts);
  return wait_all(p, ts);
}

Status recv_all(Peers& p, int peer, int step, void* buf, size_t count, size_t es, size_t chunk) {
  std::vector<TransferHandle> ts;
  post_chunked_recv(p, peer, step, buf, count, es, chunk, ts);
  return wait_all(p, ts);
}

}  // namespace

Status rd_all_reduce(Peers& p, const AlgoOptions& o, const void* send, void* recv, size_t count,
                     kf_dtype_t dtype, kf_op_t op) {
  const int n = p.size();
  const int r = p.rank();
  const size_t es = dtype_size(dtype);
  const size_t chunk = chunk_elems(o, es);
  copy_elems(recv, send, count, es);
  std::vector<char> tmp(count * es);

  int pof2 = 1;
  while (pof2 * 2 <= n) pof2 *= 2;
  const int rem = n - pof2;
  int step = 0;

  // Fold: the even rank's value is the lower one.
  int newrank;
  if (r < 2 * rem) {
    if (r % 2 == 0) {
      KF_RETURN_IF_ERROR(send_all(p, r + 1, step, recv, count, es, chunk));
      newrank = -1;
    } else {
      KF_RETURN_IF_ERROR(recv_all(p, r - 1, step, tmp.data(), count, es, chunk));
      reduce_to(dtype, op, recv, tmp.data(), recv, count);
      newrank = r / 2;
    }
  } else {
    newrank = r - rem;
  }
  ++step;

  if (newrank >= 0) {
    for (int mask = 1; mask < pof2; mask <<= 1, ++step) {
      const int pn = newrank ^ mask;
      const int partner = pn < rem ? pn * 2 + 1 : pn + rem;
      KF_RETURN_IF_ERROR(exchange(p, partner, step, recv, tmp.data(), count, es, chunk));
      if (newrank < pn) {
        reduce_to(dtype, op, recv, recv, tmp.data(), count);
      } else {
        reduce_to(dtype, op, recv, tmp.data(), recv, count);
      }
    }
  } else {
    for (int mask = 1; mask < pof2; mask <<= 1) ++step;  // keep step numbers aligned
  }

  // Unfold: give the result back to the ranks that sat out.
  if (r < 2 * rem) {
    if (r % 2 == 1) {
      KF_RETURN_IF_ERROR(send_all(p, r - 1, step, recv, count, es, chunk));
    } else {
      KF_RETURN_IF_ERROR(recv_all(p, r + 1, step, recv, count, es, chunk));
    }
  }
  // Every rank holds identical bits here, so dividing locally keeps them so.
  if (op == KF_AVG) finish_average(dtype, recv, count, n);
  return Status::ok();
}

}  // namespace kf
