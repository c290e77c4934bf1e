#include "sparse/sparse_allreduce.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "algo/common.h"
#include "algo/reduce_kernels.h"
#include "algo/ring.h"
#include "algo/strategy.h"
#include "algo/sub_peers.h"
#include "base/log.h"

namespace kf {
namespace {

// An index no shard can have: a rank whose selection failed sends its k
// pairs with this index, so the others learn of the failure from the data
// they receive anyway and nobody waits for a message that never comes.
constexpr uint32_t kFailedIndex = 0xffffffffu;

// Selects k entries of grad (+ residual) of length len into pairs. With a
// residual the sum is formed in the residual itself and the sent entries are
// cleared there afterwards, so no buffer of length len is allocated.
Status select_pairs(const float* grad, float* residual, size_t len, size_t k,
                    const TopkOptions& topt, std::vector<SparsePair>* pairs) {
  pairs->assign(k, SparsePair{0.0f, kFailedIndex});
  if (k == 0) return Status::ok();
  const float* x = grad;
  if (residual != nullptr) {
    for (size_t i = 0; i < len; ++i) residual[i] += grad[i];
    x = residual;
  }
  std::vector<float> values(k);
  std::vector<uint32_t> indices(k);
  Status st = mstopk(x, len, k, topt, values.data(), indices.data());
  if (!st.is_ok()) return st;
  for (size_t j = 0; j < k; ++j) {
    const uint32_t i = indices[j];
    if (i >= len) return internal_error("mstopk returned index " + std::to_string(i) +
                                        " outside 0.." + std::to_string(len - 1));
    // Read the value from x rather than trusting the selector's copy: the
    // residual update below must remove exactly what was sent.
    (*pairs)[j] = SparsePair{x[i], i};
  }
  if (residual != nullptr) {
    for (size_t j = 0; j < k; ++j) residual[(*pairs)[j].index] = 0.0f;
  }
  return Status::ok();
}

// Every index came over the network: checked before any is used. A block
// of the failure marker means that rank's selection failed.
Status check_block(const SparsePair* pb, size_t k, size_t len, int from) {
  for (size_t j = 0; j < k; ++j) {
    if (pb[j].index < len) continue;
    if (pb[j].index == kFailedIndex) {
      // Not a remote error: every rank finished the exchange, so the
      // communicator is still in step and stays usable.
      return invalid_usage("sparse all_reduce: rank " + std::to_string(from) +
                           " could not select its top-k entries (a non-finite gradient?"
                           " see that rank's error)");
    }
    return remote_error("sparse all_reduce: rank " + std::to_string(from) + " sent index " +
                        std::to_string(pb[j].index) + " outside 0.." + std::to_string(len - 1));
  }
  return Status::ok();
}

void add_block(const SparsePair* pb, size_t k, float* out) {
  for (size_t j = 0; j < k; ++j) out[pb[j].index] += pb[j].value;
}

void finish_op(kf_op_t op, float* buf, size_t len, int n) {
  if (op == KF_AVG) finish_average(KF_FLOAT32, buf, len, n);
}

// All-gathers k pairs per rank of `p` into `gathered` (size() * k pairs).
Status gather_pairs(Peers& p, const AlgoOptions& o, const std::vector<SparsePair>& mine, size_t k,
                    std::vector<SparsePair>* gathered) {
  gathered->resize(static_cast<size_t>(p.size()) * k);
  if (k == 0) return Status::ok();
  return all_gather(p, o, mine.data(), gathered->data(), k, KF_UINT64);
}

// Milliseconds of each phase, logged at debug level (KF_LOG_LEVEL=debug):
// where the time of a sparse all_reduce goes.
class PhaseClock {
 public:
  void mark(const char* phase) {
    const auto now = std::chrono::steady_clock::now();
    text_ += std::string(text_.empty() ? "" : ", ") + phase + " " +
             std::to_string(std::chrono::duration<double, std::milli>(now - last_).count()).substr(0, 6) + " ms";
    last_ = now;
  }
  const std::string& text() const { return text_; }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
  std::string text_;
};

}  // namespace

size_t hier_shard_k(size_t k, size_t local_size, size_t count) {
  const size_t ks = (k + local_size - 1) / local_size;
  return std::min(ks, count / local_size);  // the shortest shard's length
}

Status sparse_all_reduce_flat(Peers& p, const AlgoOptions& o, const SparseArgs& a) {
  const size_t k = std::min(a.k, a.count);
  std::vector<SparsePair> mine;
  // A failed selection still takes part in the exchange (with marked
  // pairs), then reports its own error.
  const Status selected = select_pairs(a.send, a.residual, a.count, k, a.topk, &mine);
  std::vector<SparsePair> gathered;
  KF_RETURN_IF_ERROR(gather_pairs(p, o, mine, k, &gathered));
  KF_RETURN_IF_ERROR(selected);
  // Blocks are added in rank order on every rank: the same bits everywhere.
  for (int r = 0; r < p.size(); ++r) {
    KF_RETURN_IF_ERROR(check_block(gathered.data() + static_cast<size_t>(r) * k, k, a.count, r));
  }
  std::memset(a.recv, 0, a.count * sizeof(float));
  for (int r = 0; r < p.size(); ++r) add_block(gathered.data() + static_cast<size_t>(r) * k, k, a.recv);
  finish_op(a.op, a.recv, a.count, p.size());
  return Status::ok();
}

Status sparse_all_reduce_hier(Peers& p, const AlgoOptions& o, const HostLayout& hosts,
                              const SparseArgs& a) {
  if (hosts.size() != p.size() || !hosts.uniform()) {
    return invalid_usage("the hierarchical sparse all_reduce needs the same number of ranks on "
                         "every host (hosts hold " + std::to_string(hosts.min_local_size()) +
                         " to " + std::to_string(hosts.max_local_size()) + ")");
  }
  const int me = p.rank();
  const int host = hosts.host_of(me);
  const int local_rank = hosts.local_rank(me);
  const std::vector<int> column = hosts.cross_group(local_rank);
  // Phases keep the tags of the two groups apart (SubPeers).
  SubPeers intra(p, hosts.local_group(host), 1);
  SubPeers inter(p, column, 2);
  const int L = intra.size();
  const size_t es = sizeof(float);
  const Layout lay = Layout::balanced(a.count, L, chunk_elems(o, es));
  const Range seg = lay.segment(local_rank);
  float* shard = a.recv + seg.begin;
  PhaseClock clock;

  // 1. Intra-host dense reduce-scatter: shard = sum of this host's gradients.
  //    recv doubles as the accumulator of the segments passing through.
  if (L > 1) {
    RingReduceScatterArgs rs;
    rs.layout = &lay;
    rs.dtype = KF_FLOAT32;
    rs.op = KF_SUM;
    rs.local = a.send;
    rs.acc = a.recv;
    rs.own_out = shard;
    KF_RETURN_IF_ERROR(ring_reduce_scatter_core(intra, rs));
  } else {
    copy_elems(a.recv, a.send, a.count, es);
  }

  // 2. Top-k of the shard (+ this rank's residual of it). Every rank selects
  //    the same number, so that all blocks below have one size.
  const size_t ks = hier_shard_k(a.k, static_cast<size_t>(L), a.count);
  float* res = a.residual != nullptr ? a.residual + seg.begin : nullptr;
  std::vector<SparsePair> mine;
  clock.mark("reduce-scatter");
  const Status selected = select_pairs(shard, res, seg.len, ks, a.topk, &mine);
  clock.mark("select");

  // 3. Inter-host all-gather among the ranks with my local rank. Every
  //    local rank runs its own at the same time, over its own connections.
  const size_t H = column.size();
  std::vector<SparsePair> gathered;
  KF_RETURN_IF_ERROR(gather_pairs(inter, o, mine, ks, &gathered));
  clock.mark("inter-host all-gather");

  // 4. Intra-host all-gather of the gathered pairs (H * ks per local rank),
  //    on the steps after the reduce-scatter's. The pairs, not the
  //    decompressed dense shards, cross shared memory: H * ks * 8 bytes
  //    instead of count / L * 4 per rank.
  const size_t block = H * ks;
  std::vector<SparsePair> all(static_cast<size_t>(L) * block);
  std::copy(gathered.begin(), gathered.end(), all.begin() + static_cast<long>(local_rank * block));
  if (L > 1 && block > 0) {
    const Layout pl = Layout::blocks(block, L, chunk_elems(o, sizeof(SparsePair)));
    KF_RETURN_IF_ERROR(ring_all_gather_core(intra, pl, sizeof(SparsePair), all.data(), L - 1, false));
  }
  KF_RETURN_IF_ERROR(selected);
  clock.mark("intra-host all-gather");

  // 5. Decompress: shard l of the result = sum over hosts (in host order, on
  //    every rank: the same bits everywhere) of the pairs of column l.
  for (int l = 0; l < L; ++l) {
    const std::vector<int> col = hosts.cross_group(l);
    for (size_t h = 0; h < H; ++h) {
      const SparsePair* pb = all.data() + static_cast<size_t>(l) * block + h * ks;
      KF_RETURN_IF_ERROR(check_block(pb, ks, lay.segment(l).len, col[h]));
    }
  }
  std::memset(a.recv, 0, a.count * es);
  for (int l = 0; l < L; ++l) {
    float* out = a.recv + lay.segment(l).begin;
    for (size_t h = 0; h < H; ++h) add_block(all.data() + static_cast<size_t>(l) * block + h * ks, ks, out);
  }
  finish_op(a.op, a.recv, a.count, p.size());
  clock.mark("decompress");
  KF_LOG_DEBUG("hierarchical sparse all_reduce of " + std::to_string(a.count) + " (k " +
               std::to_string(ks) + " per rank): " + clock.text());
  return Status::ok();
}

Status sparse_all_reduce_dense(Peers& p, const AlgoOptions& o, const HostLayout& hosts,
                               const SparseArgs& a) {
  const StrategyOptions so;
  const float* in = a.send;
  if (a.residual != nullptr) {
    for (size_t i = 0; i < a.count; ++i) a.residual[i] += a.send[i];
    in = a.residual;
  }
  KF_RETURN_IF_ERROR(strategy_all_reduce(p, o, so, hosts, Strategy::kAuto, in, a.recv, a.count,
                                         KF_FLOAT32, a.op));
  if (a.residual != nullptr) std::memset(a.residual, 0, a.count * sizeof(float));
  return Status::ok();
}

}  // namespace kf
