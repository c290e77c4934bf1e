// Hierarchical broadcast and all_gather (see strategy.h). Both move every
// byte across the inter-host links once: each host receives what it lacks
// through one of its ranks, and shares it over shared memory.
#include <vector>

#include "algo/common.h"
#include "algo/ring.h"
#include "algo/strategy.h"
#include "algo/sub_peers.h"

namespace kf {
namespace {

// Sub-group phases of one operation (SubPeers needs distinct ones).
enum : uint32_t { kPhaseCross = 1, kPhaseLocal = 2, kPhaseLocal2 = 3 };

// Copies block i of `from` (in `order`) to block order[i] of `to`.
void place_blocks(const std::vector<int>& order, const char* from, void* to, size_t block,
                  size_t es) {
  for (size_t i = 0; i < order.size(); ++i) {
    copy_elems(byte_ptr(to, static_cast<size_t>(order[i]) * block, es),
               from + i * block * es, block, es);
  }
}

// Equal hosts (H hosts x L ranks): local rank j gathers the blocks of local
// rank j of every host, then each host's ranks exchange what they gathered.
// Every rank's traffic is H blocks in and out across hosts.
Status all_gather_equal(Peers& p, const AlgoOptions& o, const HostLayout& hl, const void* send,
                        void* recv, size_t block, kf_dtype_t dtype) {
  const size_t es = dtype_size(dtype);
  const int r = p.rank();
  const int H = hl.host_count();
  const int L = hl.min_local_size();
  const size_t ub = static_cast<size_t>(H);
  std::vector<char> by_host(ub * block * es);
  SubPeers cross(p, hl.cross_group(hl.local_rank(r)), kPhaseCross);
  KF_RETURN_IF_ERROR(kf::all_gather(cross, o, send, by_host.data(), block, dtype));
  // by_all[j][h] is the block of local rank j on host h.
  std::vector<char> by_all(static_cast<size_t>(L) * ub * block * es);
  SubPeers local(p, hl.local_group(hl.host_of(r)), kPhaseLocal);
  KF_RETURN_IF_ERROR(kf::all_gather(local, o, by_host.data(), by_all.data(), ub * block, dtype));
  std::vector<int> order;
  for (int j = 0; j < L; ++j) {
    for (int h = 0; h < H; ++h) order.push_back(hl.rank_at(h, j));
  }
  place_blocks(order, by_all.data(), recv, block, es);
  return Status::ok();
}

// Unequal hosts: each host's leader (local rank 0) gathers its host's
// blocks, the leaders exchange whole hosts over a ring (segments of
// different sizes), and every leader broadcasts the result to its host.
Status all_gather_unequal(Peers& p, const AlgoOptions& o, const HostLayout& hl, const void* send,
                          void* recv, size_t block, kf_dtype_t dtype) {
  const size_t es = dtype_size(dtype);
  const int r = p.rank();
  const int host = hl.host_of(r);
  const size_t n = static_cast<size_t>(p.size());
  // Blocks in host-major order: host 0's ranks, then host 1's, ...
  std::vector<int> order;
  std::vector<Range> segs;
  for (int h = 0; h < hl.host_count(); ++h) {
    const std::vector<int>& g = hl.local_group(h);
    segs.push_back(Range{order.size() * block, g.size() * block});
    order.insert(order.end(), g.begin(), g.end());
  }
  std::vector<char> all(n * block * es);
  SubPeers local(p, hl.local_group(host), kPhaseLocal);
  char* mine = all.data() + segs[static_cast<size_t>(host)].begin * es;
  KF_RETURN_IF_ERROR(kf::gather(local, o, send, mine, block, dtype, 0));
  if (hl.local_rank(r) == 0 && hl.host_count() > 1) {
    SubPeers leaders(p, hl.cross_group(0), kPhaseCross);
    const Layout l = Layout::custom(segs, chunk_elems(o, es));
    KF_RETURN_IF_ERROR(ring_all_gather_core(leaders, l, es, all.data(), 0, /*own_sent=*/false));
  }
  SubPeers local2(p, hl.local_group(host), kPhaseLocal2);
  KF_RETURN_IF_ERROR(kf::broadcast(local2, o, all.data(), all.data(), n * block, dtype, 0));
  place_blocks(order, all.data(), recv, block, es);
  return Status::ok();
}

}  // namespace

Status hier_broadcast(Peers& p, const AlgoOptions& o, const HostLayout& hl, const void* send,
                      void* recv, size_t count, kf_dtype_t dtype, int root) {
  if (count == 0) return Status::ok();
  const int r = p.rank();
  if (r == root) copy_elems(recv, send, count, dtype_size(dtype));
  if (p.size() == 1) return Status::ok();
  const int root_host = hl.host_of(root);
  const int host = hl.host_of(r);
  // Each host's entry point: root on its own host, local rank 0 elsewhere.
  auto leader = [&](int h) { return h == root_host ? root : hl.rank_at(h, 0); };
  if (hl.host_count() > 1 && r == leader(host)) {
    std::vector<int> leaders;
    for (int h = 0; h < hl.host_count(); ++h) leaders.push_back(leader(h));
    SubPeers cross(p, leaders, kPhaseCross);
    KF_RETURN_IF_ERROR(kf::broadcast(cross, o, recv, recv, count, dtype, root_host));
  }
  const std::vector<int>& local = hl.local_group(host);
  if (local.size() == 1) return Status::ok();
  SubPeers lp(p, local, kPhaseLocal);
  return kf::broadcast(lp, o, recv, recv, count, dtype, hl.local_rank(leader(host)));
}

Status hier_all_gather(Peers& p, const AlgoOptions& o, const HostLayout& hl, const void* send,
                       void* recv, size_t sendcount, kf_dtype_t dtype) {
  if (sendcount == 0) return Status::ok();
  if (p.size() == 1) {
    copy_elems(recv, send, sendcount, dtype_size(dtype));
    return Status::ok();
  }
  if (hl.uniform()) return all_gather_equal(p, o, hl, send, recv, sendcount, dtype);
  return all_gather_unequal(p, o, hl, send, recv, sendcount, dtype);
}

}  // namespace kf
