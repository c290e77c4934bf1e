// The kinds of collective, part of every operation's signature (so values
// travel on the wire: never renumber).
#pragma once

#include <cstdint>

namespace kf {

enum OpKind : uint32_t {
  kAllReduce = 1,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kGather,
  kScatter,
  kBarrier,
  kSendRecv,
  // Operations of src/sparse (sparse_ops.cc), blocking and async.
  kSparseAllReduce = 101,
  kPto = 102,
};

inline const char* op_kind_name(uint32_t kind) {
  switch (kind) {
    case kAllReduce: return "all_reduce";
    case kBroadcast: return "broadcast";
    case kReduce: return "reduce";
    case kAllGather: return "all_gather";
    case kReduceScatter: return "reduce_scatter";
    case kAllToAll: return "all_to_all";
    case kGather: return "gather";
    case kScatter: return "scatter";
    case kBarrier: return "barrier";
    case kSendRecv: return "send/recv";
    case kSparseAllReduce: return "sparse_all_reduce";
    case kPto: return "pto";
    default: return "unknown";
  }
}

// Kinds whose buffers hold one block per rank: partitions slice every block.
inline bool op_kind_blocked(uint32_t kind) {
  return kind == kAllGather || kind == kReduceScatter || kind == kAllToAll || kind == kGather ||
         kind == kScatter;
}

}  // namespace kf
