// Hierarchical broadcast and all_gather (see strategy.h). Both move every
// byte across the inter-host links once: each host receives what it lacks
// through one of its ranks, and shares it over shared memory.
#include <memory>
#include <vector>

#include "algo/common.h"
#include "algo/ring.h"
#include "algo/strategy.h"
#include "algo/sub_peers.h"

namespace kf {
namespace {

// Sub-group phases of one operation (SubPeers needs distinct ones).
// kPhaseEqualLocal + h: the within-host exchange of host h's blocks.
enum : uint32_t { kPhaseCross = 1, kPhaseLocal = 2, kPhaseLocal2 = 3, kPhaseEqualLocal = 4 };

// Copies block i of `from` (in `order`) to block order[i] of `to`.
void place_blocks(const std::vector<int>& order, const char* from, void* to, size_t block,
                  size_t es) {
  for (size_t i = 0; i < order.size(); ++i) {
    copy_elems(byte_ptr(to, static_cast<size_t>(order[i]) * block, es), from + i * block * es,
               block, es);
  }
}

// Equal hosts (H hosts x L ranks): local rank j gathers the blocks of local
// rank j of every host (across hosts), then for every host h the host's
// ranks exchange the blocks of host h's ranks (within the host). Every
// rank's inter-host traffic is H - 1 blocks each way, and every block goes
// straight to its place in recv: the rings run over layouts whose segments
// sit wherever their ranks' blocks belong, so nothing is staged or copied.
Status all_gather_equal(Peers& p, const AlgoOptions& o, const HostLayout& hl, const void* send,
                        void* recv, size_t block, kf_dtype_t dtype) {
  const size_t es = dtype_size(dtype);
  const int r = p.rank();
  const int H = hl.host_count();
  const int L = hl.min_local_size();
  // In place when send already sits at block r; copy_elems skips it.
  copy_elems(byte_ptr(recv, static_cast<size_t>(r) * block, es), send, block, es);
  // The segments of ranks `ranks`, at their blocks' places in recv.
  auto layout_of = [&](const std::vector<int>& ranks) {
    std::vector<Range> segs;
    for (int q : ranks) segs.push_back(Range{static_cast<size_t>(q) * block, block});
    return Layout::custom(std::move(segs), chunk_elems(o, es));
  };
  if (H > 1) {
    const std::vector<int> cross = hl.cross_group(hl.local_rank(r));
    SubPeers cp(p, cross, kPhaseCross);
    KF_RETURN_IF_ERROR(ring_all_gather_core(cp, layout_of(cross), es, recv, 0, /*own_sent=*/false));
  }
  if (L > 1) {
    // Host h's blocks: local rank j now holds the block of rank_at(h, j).
    for (int h = 0; h < H; ++h) {
      SubPeers lp(p, hl.local_group(hl.host_of(r)), kPhaseEqualLocal + static_cast<uint32_t>(h));
      KF_RETURN_IF_ERROR(
          ring_all_gather_core(lp, layout_of(hl.local_group(h)), es, recv, 0, /*own_sent=*/false));
    }
  }
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
  std::unique_ptr<char[]> all_buf(new char[n * block * es]);  // not zero-filled
  char* all = all_buf.get();
  SubPeers local(p, hl.local_group(host), kPhaseLocal);
  char* mine = all + segs[static_cast<size_t>(host)].begin * es;
  KF_RETURN_IF_ERROR(kf::gather(local, o, send, mine, block, dtype, 0));
  if (hl.local_rank(r) == 0 && hl.host_count() > 1) {
    SubPeers leaders(p, hl.cross_group(0), kPhaseCross);
    const Layout l = Layout::custom(segs, chunk_elems(o, es));
    KF_RETURN_IF_ERROR(ring_all_gather_core(leaders, l, es, all, 0, /*own_sent=*/false));
  }
  SubPeers local2(p, hl.local_group(host), kPhaseLocal2);
  KF_RETURN_IF_ERROR(kf::broadcast(local2, o, all, all, n * block, dtype, 0));
  place_blocks(order, all, recv, block, es);
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
