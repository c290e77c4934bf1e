// The individual algorithms behind the public entry points of collectives.h.
// select.cc picks one of them; tests may call them directly. All assume
// size >= 2 and count > 0 (the entry points handle the trivial cases).
#pragma once

#include <cstddef>

#include "algo/collectives.h"
#include "algo/peers.h"
#include "kungfu/types.h"

namespace kf {

// ring.cc / ring_reduce.cc: bandwidth-optimal, pipelined in o.chunk_bytes.
Status ring_all_reduce(Peers& p, const AlgoOptions& o, const void* send, void* recv, size_t count,
                       kf_dtype_t dtype, kf_op_t op);
// Ring reduce-scatter followed by a direct gather of the segments to root.
Status ring_reduce(Peers& p, const AlgoOptions& o, const void* send, void* recv, size_t count,
                   kf_dtype_t dtype, kf_op_t op, int root);

// recursive_doubling.cc: latency-optimal (log2 rounds), every rank sends the
// whole buffer each round. Non-powers of two fold the extra ranks first.
Status rd_all_reduce(Peers& p, const AlgoOptions& o, const void* send, void* recv, size_t count,
                     kf_dtype_t dtype, kf_op_t op);

// tree.cc: binomial trees (log2 depth) and a pipelined chain for large data.
Status binomial_broadcast(Peers& p, const AlgoOptions& o, void* buf, size_t count, kf_dtype_t dtype,
                          int root);
Status chain_broadcast(Peers& p, const AlgoOptions& o, void* buf, size_t count, kf_dtype_t dtype,
                       int root);
Status binomial_reduce(Peers& p, const AlgoOptions& o, const void* send, void* recv, size_t count,
                       kf_dtype_t dtype, kf_op_t op, int root);

}  // namespace kf
