// How an asynchronous operation is cut into partitions, and how one
// partition runs: the blocking algorithm of its kind on a slice of the
// buffers. Partition k covers elements [k*pe, k*pe + len) of the whole
// buffer, or of every rank's block for the blocked kinds (all_gather,
// reduce_scatter, all_to_all, gather, scatter), which run on packed
// temporaries when there is more than one partition.
#pragma once

#include <cstddef>
#include <cstdint>

#include "algo/collectives.h"
#include "algo/peers.h"
#include "base/status.h"

namespace kf {

struct AsyncOpSpec;

struct PartitionPlan {
  uint64_t elems = 1;     // per partition (per block for blocked kinds)
  uint32_t count = 1;     // number of partitions, >= 1 (one empty one for count 0)
};

// The plan every rank computes alike from the signature and partition size.
PartitionPlan plan_partitions(uint32_t kind, uint64_t count, size_t esize, int nranks,
                              uint64_t partition_bytes);

// First element of partition `index` (per block for blocked kinds).
inline uint64_t partition_begin(const PartitionPlan& plan, uint32_t index) {
  return uint64_t(index) * plan.elems;
}
// Elements of partition `index` (per block for blocked kinds).
uint64_t partition_len(const PartitionPlan& plan, uint64_t count, uint32_t index);

// Bytes partition `index` moves through this rank's buffers (credit unit).
uint64_t partition_bytes_of(const PartitionPlan& plan, const AsyncOpSpec& spec, size_t esize,
                            int nranks, uint32_t index);

// Runs partition `index` of `spec` to completion over `p`.
Status run_partition(Peers& p, const AlgoOptions& algo, const AsyncOpSpec& spec,
                     const PartitionPlan& plan, uint32_t index);

}  // namespace kf
