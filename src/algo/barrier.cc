// Dissemination barrier: in round k every rank sends an empty message to
// r + 2^k and receives one from r - 2^k. After ceil(log2 n) rounds every rank
// has heard, directly or through others, from every rank, so none can leave
// before all have entered. Works for any n, not only powers of two.
#include <vector>

#include "algo/collectives.h"
#include "algo/common.h"

namespace kf {

Status barrier(Peers& p, const AlgoOptions& o) {
  const int n = p.size();
  const int r = p.rank();
  // Zero-length messages still get a valid pointer; no transport should have
  // to special-case nullptr.
  char none = 0;
  int round = 0;
  for (int dist = 1; dist < n; dist <<= 1, ++round) {
    std::vector<TransferHandle> ts;
    ts.push_back(p.irecv(mod(r - dist, n), make_tag(0, round), &none, 0));
    ts.push_back(p.isend(mod(r + dist, n), make_tag(0, round), &none, 0));
    KF_RETURN_IF_ERROR(wait_all(p, ts));
  }
  return Status::ok();
}

}  // namespace kf
