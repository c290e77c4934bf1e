// The sparse all_reduce and the parallel tensor operation (PTO) as blocking
// named operations of a Communicator: algorithm choice (dense fallback,
// flat, hierarchical from the job's host layout) and the operation's
// signature. src/api calls these after checking arguments.
#pragma once

#include <cstddef>
#include <functional>

#include "base/status.h"
#include "sched/communicator.h"
#include "sparse/sparse_allreduce.h"

namespace kf {

struct SparseRequest {
  SparseArgs args;
  SparseAlgorithm algorithm = SparseAlgorithm::kAuto;
  // Counts below this run the dense fallback (KF_SPARSE_MIN_ELEMS).
  size_t min_elems = 0;
};

// The algorithm a request runs on `c`: kDense below the threshold or when
// k is at least half the count (pairs would then cost more than the dense
// data); kAuto becomes kHier on several hosts with several ranks each (the
// same number on every host), else kFlat.
SparseAlgorithm choose_sparse_algorithm(const Communicator& c, const SparseRequest& r);

Status sparse_all_reduce(Communicator& c, const SparseRequest& r);

// The same as an asynchronous named operation: fills the signature (kind,
// count, dtype, op, and k / algorithm / residual mixed into root) and the
// body of `spec` (one partition, run by the async engine over its Peers).
// The caller sets the name and priority and submits it.
void sparse_async_spec(Communicator& c, const SparseRequest& r, AsyncOpSpec* spec);

// The user's step on this rank's shard: (shard, shard count, offset of the
// shard in the whole buffer) -> 0 on success, anything else is a failure.
using PtoCallback = std::function<int(void* shard, size_t count, size_t offset)>;

// Reduce-scatter `buf` in place (op), call `fn` on this rank's shard
// (Layout::balanced: uneven counts allowed), all-gather the shards. If the
// callback fails on any rank, every rank returns KF_ERR_INVALID_USAGE naming
// the rank and its code, the all-gather is skipped, and buf holds partial
// results.
Status pto(Communicator& c, void* buf, size_t count, kf_dtype_t dt, kf_op_t op,
           const PtoCallback& fn);

// The same over any Peers (tests run it over in-process peers).
Status pto_over(Peers& p, const AlgoOptions& o, void* buf, size_t count, kf_dtype_t dt,
                kf_op_t op, const PtoCallback& fn);

}  // namespace kf
