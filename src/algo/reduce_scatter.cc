// reduce_scatter: the ring's reduce-scatter with one block per rank.
#include <vector>

#include "algo/collectives.h"
#include "algo/common.h"
#include "algo/reduce_kernels.h"
#include "algo/ring.h"

namespace kf {

Status reduce_scatter(Peers& p, const AlgoOptions& o, const void* send, void* recv,
                      size_t recvcount, kf_dtype_t dtype, kf_op_t op) {
  const int n = p.size();
  const size_t es = dtype_size(dtype);
  if (recvcount == 0) return Status::ok();
  if (n == 1) {
    copy_elems(recv, send, recvcount, es);
    return Status::ok();
  }
  const Layout l = Layout::blocks(recvcount, n, chunk_elems(o, es));

  // Partial sums of the other ranks' blocks pass through here; the caller's
  // send buffer is read-only (even in place only block r is ours to write),
  // so they go to scratch. Block r's slot of the scratch stays unused, which
  // keeps the indexing trivial.
  std::vector<char> scratch(static_cast<size_t>(n) * recvcount * es);
  RingReduceScatterArgs a;
  a.layout = &l;
  a.dtype = dtype;
  a.op = op;
  a.local = send;
  a.acc = scratch.data();
  a.own_out = recv;  // in place this is send's block r, which reduce_to allows
  a.on_final = [&](size_t, Range c, void* result) {
    if (op == KF_AVG) finish_average(dtype, result, c.len, n);
  };
  return ring_reduce_scatter_core(p, a);
}

}  // namespace kf
