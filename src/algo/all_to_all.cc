// all_to_all by pairwise exchange: at step s (1 .. size-1) rank r sends its
// block for r+s and receives the block of r-s. Every rank talks to one peer
// in each direction per step, so no link is oversubscribed, and each step
// only waits for its own two transfers.
#include <vector>

#include "algo/collectives.h"
#include "algo/common.h"

namespace kf {

Status all_to_all(Peers& p, const AlgoOptions& o, const void* send, void* recv, size_t count,
                  kf_dtype_t dtype) {
  const int n = p.size();
  const int r = p.rank();
  const size_t es = dtype_size(dtype);
  if (count == 0) return Status::ok();
  const size_t block = count;
  auto at = [&](const void* base, int b) {
    return byte_ptr(base, static_cast<size_t>(b) * block, es);
  };

  // In place, a block may arrive before this rank has sent what was in its
  // place (block r-s is sent at step n-s), so sends read from a copy.
  std::vector<char> copy;
  const void* src = send;
  if (send == recv && n > 1) {
    copy.assign(static_cast<const char*>(send),
                static_cast<const char*>(send) + static_cast<size_t>(n) * block * es);
    src = copy.data();
  }
  copy_elems(byte_ptr(recv, static_cast<size_t>(r) * block, es), at(src, r), block, es);

  const size_t chunk = chunk_elems(o, es);
  for (int s = 1; s < n; ++s) {
    const int to = mod(r + s, n);
    const int from = mod(r - s, n);
    std::vector<TransferHandle> ts;
    post_chunked_recv(p, from, s, byte_ptr(recv, static_cast<size_t>(from) * block, es), block, es,
                      chunk, ts);
    post_chunked_send(p, to, s, at(src, to), block, es, chunk, ts);
    KF_RETURN_IF_ERROR(wait_all(p, ts));
  }
  return Status::ok();
}

}  // namespace kf
