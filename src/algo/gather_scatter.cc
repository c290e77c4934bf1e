// gather and scatter: root posts every receive (or send) at once and the
// others make one transfer each. Root's link is the bottleneck either way,
// and a flat pattern keeps every byte on one hop.
#include <vector>

#include "algo/collectives.h"
#include "algo/common.h"

namespace kf {

Status gather(Peers& p, const AlgoOptions& o, const void* send, void* recv, size_t sendcount,
              kf_dtype_t dtype, int root) {
  const int n = p.size();
  const int r = p.rank();
  const size_t es = dtype_size(dtype);
  if (sendcount == 0) return Status::ok();
  const size_t chunk = chunk_elems(o, es);
  std::vector<TransferHandle> ts;
  if (r == root) {
    for (int src = 0; src < n; ++src) {
      if (src == r) continue;
      post_chunked_recv(p, src, 0, byte_ptr(recv, static_cast<size_t>(src) * sendcount, es),
                        sendcount, es, chunk, ts);
    }
    // In place when send already sits at block root; copy_elems skips it.
    copy_elems(byte_ptr(recv, static_cast<size_t>(r) * sendcount, es), send, sendcount, es);
  } else {
    post_chunked_send(p, root, 0, send, sendcount, es, chunk, ts);
  }
  return wait_all(p, ts);
}

Status scatter(Peers& p, const AlgoOptions& o, const void* send, void* recv, size_t recvcount,
               kf_dtype_t dtype, int root) {
  const int n = p.size();
  const int r = p.rank();
  const size_t es = dtype_size(dtype);
  if (recvcount == 0) return Status::ok();
  const size_t chunk = chunk_elems(o, es);
  std::vector<TransferHandle> ts;
  if (r == root) {
    for (int dst = 0; dst < n; ++dst) {
      if (dst == r) continue;
      post_chunked_send(p, dst, 0, byte_ptr(send, static_cast<size_t>(dst) * recvcount, es),
                        recvcount, es, chunk, ts);
    }
    copy_elems(recv, byte_ptr(send, static_cast<size_t>(r) * recvcount, es), recvcount, es);
  } else {
    post_chunked_recv(p, root, 0, recv, recvcount, es, chunk, ts);
  }
  return wait_all(p, ts);
}

}  // namespace kf
