#include "sparse/sparse_ops.h"

#include <cstdint>
#include <string>
#include <vector>

#include "algo/common.h"
#include "algo/reduce_kernels.h"
#include "algo/ring.h"
#include "sched/op_kind.h"

namespace kf {
namespace {

// The host layout of the job, from the topology exchanged at init (one
// host when the topology is missing).
HostLayout layout_of(const Communicator& c) {
  const JobTopology& t = c.topology();
  if (t.size() == c.size()) return HostLayout::from_topology(t);
  return HostLayout::single_host(c.size());
}

bool uniform_multi_host(const HostLayout& h) {
  return h.host_count() > 1 && h.uniform() && h.min_local_size() > 1;
}

}  // namespace

SparseAlgorithm choose_sparse_algorithm(const Communicator& c, const SparseRequest& r) {
  const SparseArgs& a = r.args;
  if (r.algorithm == SparseAlgorithm::kDense || a.count < r.min_elems || 2 * a.k >= a.count) {
    return SparseAlgorithm::kDense;
  }
  if (r.algorithm != SparseAlgorithm::kAuto) return r.algorithm;
  return uniform_multi_host(layout_of(c)) ? SparseAlgorithm::kHier : SparseAlgorithm::kFlat;
}

namespace {

OpSignature sparse_signature(const SparseRequest& r, SparseAlgorithm algo) {
  OpSignature sig;
  sig.kind = kSparseAllReduce;
  sig.count = r.args.count;
  sig.dtype = KF_FLOAT32;
  sig.op = r.args.op;
  // k, the algorithm and whether a residual is kept must agree too; they
  // share the root field (which this operation has no use for).
  const uint64_t mix = (r.args.k * 31u + static_cast<uint64_t>(algo)) * 2u +
                       (r.args.residual != nullptr ? 1u : 0u);
  sig.root = static_cast<int32_t>(static_cast<uint32_t>(mix ^ (mix >> 32)));
  return sig;
}

Status run_sparse(Peers& p, const AlgoOptions& o, const HostLayout& hosts, SparseAlgorithm algo,
                  const SparseArgs& a) {
  if (p.size() == 1 || algo == SparseAlgorithm::kDense) {
    return sparse_all_reduce_dense(p, o, hosts, a);
  }
  if (algo == SparseAlgorithm::kHier) return sparse_all_reduce_hier(p, o, hosts, a);
  return sparse_all_reduce_flat(p, o, a);
}

}  // namespace

Status sparse_all_reduce(Communicator& c, const SparseRequest& r) {
  const SparseAlgorithm algo = choose_sparse_algorithm(c, r);
  const HostLayout hosts = layout_of(c);
  const AlgoOptions& o = c.algo_options();
  return c.run_custom("kf.sparse_all_reduce", sparse_signature(r, algo),
                      [&](Peers& p) { return run_sparse(p, o, hosts, algo, r.args); });
}

void sparse_async_spec(Communicator& c, const SparseRequest& r, AsyncOpSpec* spec) {
  const SparseAlgorithm algo = choose_sparse_algorithm(c, r);
  const OpSignature sig = sparse_signature(r, algo);
  spec->kind = sig.kind;
  spec->count = sig.count;
  spec->dtype = KF_FLOAT32;
  spec->op = sig.op;
  spec->root = sig.root;
  spec->send = r.args.send;
  spec->recv = r.args.recv;
  spec->strategy = -1;
  // One partition: the algorithm selects over the whole gradient.
  spec->partition_bytes = UINT64_MAX;
  // The body owns copies of what it needs (it runs after this call returns);
  // the algorithm options live as long as the communicator and its engine.
  const AlgoOptions* o = &c.algo_options();
  spec->body = [o, hosts = layout_of(c), algo, args = r.args](Peers& p) {
    if (args.count == 0) return Status::ok();
    return run_sparse(p, *o, hosts, algo, args);
  };
}

Status pto_over(Peers& p, const AlgoOptions& o, void* buf, size_t count, kf_dtype_t dt,
                kf_op_t op, const PtoCallback& fn) {
  const int n = p.size();
  const int r = p.rank();
  const size_t es = dtype_size(dt);
  const Layout lay = Layout::balanced(count, n, chunk_elems(o, es));
  const Range seg = lay.segment(r);
  void* shard = byte_ptr(buf, seg.begin, es);

  // 1. Reduce-scatter in place: the partial sums passing through this rank
  //    go to the segments of buf that the all-gather overwrites later.
  if (n > 1) {
    RingReduceScatterArgs rs;
    rs.layout = &lay;
    rs.dtype = dt;
    rs.op = op;
    rs.local = buf;
    rs.acc = buf;
    rs.own_out = shard;
    rs.on_final = [&](size_t, Range c, void* result) {
      if (op == KF_AVG) finish_average(dt, result, c.len, n);
    };
    KF_RETURN_IF_ERROR(ring_reduce_scatter_core(p, rs));
  }

  // 2. The user's step on the shard. Its result code is shared with every
  //    rank (one int each, steps after the reduce-scatter's) so that all
  //    ranks agree on whether to go on.
  const int32_t code = static_cast<int32_t>(fn(shard, seg.len, seg.begin));
  if (n == 1) {
    if (code != 0) {
      return invalid_usage("kf_pto: the callback returned " + std::to_string(code) + " on rank 0");
    }
    return Status::ok();
  }
  std::vector<int32_t> codes(static_cast<size_t>(n), 0);
  codes[static_cast<size_t>(r)] = code;
  const Layout one_each = Layout::blocks(1, n, 1);
  KF_RETURN_IF_ERROR(ring_all_gather_core(p, one_each, sizeof(int32_t), codes.data(), n - 1, false));
  for (int q = 0; q < n; ++q) {
    if (codes[static_cast<size_t>(q)] != 0) {
      return invalid_usage("kf_pto: the callback returned " +
                           std::to_string(codes[static_cast<size_t>(q)]) + " on rank " +
                           std::to_string(q));
    }
  }

  // 3. All-gather the updated shards.
  return ring_all_gather_core(p, lay, es, buf, 2 * (n - 1), false);
}

Status pto(Communicator& c, void* buf, size_t count, kf_dtype_t dt, kf_op_t op,
           const PtoCallback& fn) {
  OpSignature sig;
  sig.kind = kPto;
  sig.count = count;
  sig.dtype = dt;
  sig.op = op;
  const AlgoOptions& o = c.algo_options();
  return c.run_custom("kf.pto", sig,
                      [&](Peers& p) { return pto_over(p, o, buf, count, dt, op, fn); });
}

}  // namespace kf
