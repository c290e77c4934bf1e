// all_gather: the ring's all-gather with one block per rank.
#include "algo/collectives.h"
#include "algo/common.h"
#include "algo/ring.h"

namespace kf {

Status all_gather(Peers& p, const AlgoOptions& o, const void* send, void* recv, size_t sendcount,
                  kf_dtype_t dtype) {
  const int n = p.size();
  const size_t es = dtype_size(dtype);
  if (sendcount == 0) return Status::ok();
  // In place when send already sits at block r of recv; copy_elems skips it.
  copy_elems(byte_ptr(recv, static_cast<size_t>(p.rank()) * sendcount, es), send, sendcount, es);
  if (n == 1) return Status::ok();
  const Layout l = Layout::blocks(sendcount, n, chunk_elems(o, es));
  return ring_all_gather_core(p, l, es, recv, /*step_base=*/0, /*own_sent=*/false);
}

}  // namespace kf
