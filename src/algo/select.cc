// The entry points that have more than one algorithm, and the one place
// where the choice is made.
//
// kAuto rules, with B the message size in bytes and n the number of ranks:
//  - all_reduce: ring when B >= ring_threshold_bytes and B >= n elements,
//    else recursive doubling. The ring moves 2(n-1)/n * B per rank in
//    2(n-1) pipelined steps; recursive doubling moves B * log2(n) in log2(n)
//    steps. Below the threshold the per-step latency dominates, so fewer
//    steps win. The ring is used at n = 2 as well: there both move B per
//    rank, but the ring reduces only half the data on each rank and
//    overlaps chunks. With fewer elements than ranks some ring segments
//    would be empty, which is pure latency, so that case stays on doubling.
//  - reduce: ring reduce-scatter + direct gather to root above the
//    threshold (about 2B per rank, pipelined), binomial tree below it
//    (log2(n) steps, B per step).
//  - broadcast: pipelined chain above the threshold (B plus (n-1) chunk
//    times), binomial tree below it (log2(n) steps).
// kRing and kRecursiveDoubling force the bandwidth or the latency family.
#include "algo/collectives.h"
#include "algo/common.h"
#include "algo/internal.h"

namespace kf {

bool uses_ring(const AlgoOptions& o, size_t count, size_t es, int n) {
  switch (o.algorithm) {
    case Algorithm::kRing:
      return true;
    case Algorithm::kRecursiveDoubling:
      return false;
    case Algorithm::kAuto:
      break;
  }
  return count * es >= o.ring_threshold_bytes && count >= static_cast<size_t>(n);
}

Status all_reduce(Peers& p, const AlgoOptions& o, const void* send, void* recv, size_t count,
                  kf_dtype_t dtype, kf_op_t op) {
  const size_t es = dtype_size(dtype);
  if (count == 0) return Status::ok();
  if (p.size() == 1) {
    copy_elems(recv, send, count, es);  // the average of one rank is its value
    return Status::ok();
  }
  if (uses_ring(o, count, es, p.size())) return ring_all_reduce(p, o, send, recv, count, dtype, op);
  return rd_all_reduce(p, o, send, recv, count, dtype, op);
}

Status reduce(Peers& p, const AlgoOptions& o, const void* send, void* recv, size_t count,
              kf_dtype_t dtype, kf_op_t op, int root) {
  const size_t es = dtype_size(dtype);
  if (count == 0) return Status::ok();
  if (p.size() == 1) {
    copy_elems(recv, send, count, es);
    return Status::ok();
  }
  if (uses_ring(o, count, es, p.size()))
    return ring_reduce(p, o, send, recv, count, dtype, op, root);
  return binomial_reduce(p, o, send, recv, count, dtype, op, root);
}

Status broadcast(Peers& p, const AlgoOptions& o, const void* send, void* recv, size_t count,
                 kf_dtype_t dtype, int root) {
  const size_t es = dtype_size(dtype);
  if (count == 0) return Status::ok();
  // Root sends from its result buffer, so an out-of-place root copies first.
  if (p.rank() == root) copy_elems(recv, send, count, es);
  if (p.size() == 1) return Status::ok();
  if (uses_ring(o, count, es, p.size())) return chain_broadcast(p, o, recv, count, dtype, root);
  return binomial_broadcast(p, o, recv, count, dtype, root);
}

}  // namespace kf
