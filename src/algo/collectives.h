// The collective algorithms, written once against Peers. Each function runs
// one operation to completion on the calling thread and returns its status.
// Arguments are already validated by src/api; counts are in elements.
#pragma once

#include <cstddef>
#include <cstdint>

#include "algo/peers.h"
#include "kungfu/types.h"

namespace kf {

// Which family of algorithm to run. kAuto chooses by message size and rank count.
enum class Algorithm { kAuto, kRing, kRecursiveDoubling };

struct AlgoOptions {
  Algorithm algorithm = Algorithm::kAuto;
  size_t ring_threshold_bytes = 64 * 1024;  // kAuto: at least this many bytes -> ring
  size_t chunk_bytes = 1 << 20;             // pipelining unit of the ring algorithms
};

// Whether all_reduce, reduce and broadcast take the ring family (else the
// latency family) for `count` elements of `esize` bytes on n ranks: the one
// rule, in select.cc. Every rank answers alike for the same arguments.
bool uses_ring(const AlgoOptions& o, size_t count, size_t esize, int n);

Status all_reduce(Peers& p, const AlgoOptions& o, const void* send, void* recv, size_t count,
                  kf_dtype_t dtype, kf_op_t op);
Status broadcast(Peers& p, const AlgoOptions& o, const void* send, void* recv, size_t count,
                 kf_dtype_t dtype, int root);
Status reduce(Peers& p, const AlgoOptions& o, const void* send, void* recv, size_t count,
              kf_dtype_t dtype, kf_op_t op, int root);
Status all_gather(Peers& p, const AlgoOptions& o, const void* send, void* recv, size_t sendcount,
                  kf_dtype_t dtype);
Status reduce_scatter(Peers& p, const AlgoOptions& o, const void* send, void* recv,
                      size_t recvcount, kf_dtype_t dtype, kf_op_t op);
Status all_to_all(Peers& p, const AlgoOptions& o, const void* send, void* recv, size_t count,
                  kf_dtype_t dtype);
Status gather(Peers& p, const AlgoOptions& o, const void* send, void* recv, size_t sendcount,
              kf_dtype_t dtype, int root);
Status scatter(Peers& p, const AlgoOptions& o, const void* send, void* recv, size_t recvcount,
               kf_dtype_t dtype, int root);
Status barrier(Peers& p, const AlgoOptions& o);

}  // namespace kf
