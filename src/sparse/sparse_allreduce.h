// Sparse all_reduce of float32 gradients: every rank contributes only the k
// largest-magnitude entries (MSTopK) of its gradient, as (value, index)
// pairs, and every rank ends with the same dense sum of what was sent.
// Algorithms are step programs over Peers, like src/algo.
//
// Error feedback: with a residual buffer, the entries a rank did not send
// are kept there and added to the next call's gradient, so no gradient mass
// is ever dropped, only delayed. What a rank's residual holds:
//   flat:  residual = (send + old residual) with the sent entries set to 0,
//          over the whole buffer. Sum of sent values + residual = send + old
//          residual, element by element.
//   hier:  rank with local rank l owns shard l of the host's intra-host split
//          (Layout::balanced(count, local size)). Its residual holds, inside
//          that shard only, the host-summed gradient (sum of the send buffers
//          of the ranks of this host) + old residual, minus what this rank
//          sent. Entries outside its shard are neither read nor written
//          (they stay 0 if they started 0). Summed over the ranks of a host,
//          sent + residual = host gradient + old residuals.
//   dense: everything is sent; residual is added first, then set to 0.
#pragma once

#include <cstddef>
#include <cstdint>

#include "algo/collectives.h"
#include "algo/peers.h"
#include "base/status.h"
#include "kungfu/types.h"
#include "algo/host_layout.h"
#include "sparse/topk.h"

namespace kf {

enum class SparseAlgorithm { kAuto = 0, kFlat = 1, kHier = 2, kDense = 3 };

struct SparseArgs {
  const float* send = nullptr;  // count gradients; may equal recv
  float* recv = nullptr;        // count results, identical on every rank
  size_t count = 0;
  size_t k = 0;                 // entries each rank selects (hier: per host, split over local ranks)
  float* residual = nullptr;    // optional, count floats, see above
  kf_op_t op = KF_SUM;          // KF_SUM or KF_AVG
  TopkOptions topk;
};

// One (value, index) pair on the wire: 8 bytes, gathered as KF_UINT64.
struct SparsePair {
  float value;
  uint32_t index;
};
static_assert(sizeof(SparsePair) == 8, "pairs travel as 8-byte words");

// Flat: select k, all-gather the pairs among all ranks, scatter-add.
Status sparse_all_reduce_flat(Peers& p, const AlgoOptions& o, const SparseArgs& a);

// Hierarchical (HiTopKComm): intra-host dense reduce-scatter, MSTopK of
// hier_shard_k() entries of each rank's shard, all-gather of the pairs among
// the ranks with the same local rank (one per host, all columns at once),
// intra-host all-gather of those pairs, and every rank adds all pairs into
// its output. (Gathering the pairs rather than the decompressed dense shards
// moves H*ks*8 bytes per rank through shared memory instead of count/L*4.)
// `hosts` must describe the ranks of p and hold the same number of ranks on
// every host (KF_ERR_INVALID_USAGE otherwise).
Status sparse_all_reduce_hier(Peers& p, const AlgoOptions& o, const HostLayout& hosts,
                              const SparseArgs& a);

// Dense fallback: (send + residual) all-reduced with the library's dense
// strategy for this layout (hierarchical on several hosts, see
// algo/strategy.h); residual set to 0.
Status sparse_all_reduce_dense(Peers& p, const AlgoOptions& o, const HostLayout& hosts,
                               const SparseArgs& a);

// Pairs each rank of the hierarchical algorithm selects from its shard:
// ceil(k / local_size), at most the shortest shard (count / local_size).
size_t hier_shard_k(size_t k, size_t local_size, size_t count);

}  // namespace kf
