#include "sched/async_partition.h"

#include <cstring>
#include <vector>

#include "algo/common.h"
#include "sched/async_engine.h"
#include "sched/op_kind.h"

namespace kf {
namespace {

constexpr uint64_t kMaxPartitions = (uint64_t(1) << AsyncEngine::kPartitionBits) - 2;

// p + elems * esize, keeping NULL as NULL (buffers that a rank does not use).
const char* at(const void* p, uint64_t elems, size_t es) {
  return p == nullptr ? nullptr : static_cast<const char*>(p) + elems * es;
}
char* at(void* p, uint64_t elems, size_t es) {
  return p == nullptr ? nullptr : static_cast<char*>(p) + elems * es;
}

// Copies slice [b, b+len) of each of n blocks of `block` elements into a
// packed buffer of n * len elements, or back.
void pack(char* dst, const void* src, int n, uint64_t block, uint64_t b, uint64_t len, size_t es) {
  for (int r = 0; r < n; ++r) {
    std::memcpy(dst + uint64_t(r) * len * es, at(src, uint64_t(r) * block + b, es), len * es);
  }
}
void unpack(void* dst, const char* src, int n, uint64_t block, uint64_t b, uint64_t len,
            size_t es) {
  for (int r = 0; r < n; ++r) {
    std::memcpy(at(dst, uint64_t(r) * block + b, es), src + uint64_t(r) * len * es, len * es);
  }
}

}  // namespace

PartitionPlan plan_partitions(uint32_t kind, uint64_t count, size_t esize, int nranks,
                              uint64_t partition_bytes) {
  PartitionPlan plan;
  if (count == 0 || kind == kBarrier) return plan;
  uint64_t unit = esize * (op_kind_blocked(kind) ? uint64_t(nranks) : 1);
  uint64_t pe = partition_bytes / unit;
  if (pe == 0) pe = 1;
  if ((count + pe - 1) / pe > kMaxPartitions) pe = (count + kMaxPartitions - 1) / kMaxPartitions;
  if (pe > count) pe = count;
  plan.elems = pe;
  plan.count = static_cast<uint32_t>((count + pe - 1) / pe);
  return plan;
}

uint64_t partition_len(const PartitionPlan& plan, uint64_t count, uint32_t index) {
  const uint64_t b = partition_begin(plan, index);
  if (b >= count) return 0;
  return std::min<uint64_t>(plan.elems, count - b);
}

uint64_t partition_bytes_of(const PartitionPlan& plan, const AsyncOpSpec& spec, size_t esize,
                            int nranks, uint32_t index) {
  uint64_t len = partition_len(plan, spec.count, index);
  return len * esize * (op_kind_blocked(spec.kind) ? uint64_t(nranks) : 1);
}

Status run_partition(Peers& p, const AlgoOptions& algo, const AsyncOpSpec& s,
                     const PartitionPlan& plan, uint32_t index) {
  const size_t es = dtype_size(s.dtype);
  const uint64_t b = partition_begin(plan, index);
  const uint64_t len = partition_len(plan, s.count, index);
  const int n = p.size();
  const bool whole = plan.count == 1;
  const kf_op_t op = static_cast<kf_op_t>(s.op);
  if (s.body) {
    if (plan.count != 1) return internal_error("an operation with its own body must have one partition");
    return s.body(p);
  }
  if (s.kind == kBarrier) return barrier(p, algo);
  if (len == 0) return Status::ok();
  // The communicator's strategy (read at submission) for the kinds it
  // changes; every rank resolves it alike from the partition's size.
  const bool strat = s.strategy >= 0 && s.hosts != nullptr;
  const Strategy st = static_cast<Strategy>(s.strategy);
  switch (s.kind) {
    case kAllReduce:
      if (strat) {
        return strategy_all_reduce(p, algo, s.strategy_opts, *s.hosts, st, at(s.send, b, es),
                                   at(s.recv, b, es), len, s.dtype, op);
      }
      return all_reduce(p, algo, at(s.send, b, es), at(s.recv, b, es), len, s.dtype, op);
    case kBroadcast:
      if (strat) {
        return strategy_broadcast(p, algo, s.strategy_opts, *s.hosts, st, at(s.send, b, es),
                                  at(s.recv, b, es), len, s.dtype, s.root);
      }
      return broadcast(p, algo, at(s.send, b, es), at(s.recv, b, es), len, s.dtype, s.root);
    case kReduce:
      return reduce(p, algo, at(s.send, b, es), at(s.recv, b, es), len, s.dtype, op, s.root);
    default:
      break;
  }
  if (whole) {
    switch (s.kind) {
      case kAllGather:
        if (strat) {
          return strategy_all_gather(p, algo, s.strategy_opts, *s.hosts, st, s.send, s.recv, len,
                                     s.dtype);
        }
        return all_gather(p, algo, s.send, s.recv, len, s.dtype);
      case kReduceScatter: return reduce_scatter(p, algo, s.send, s.recv, len, s.dtype, op);
      case kAllToAll: return all_to_all(p, algo, s.send, s.recv, len, s.dtype);
      case kGather: return gather(p, algo, s.send, s.recv, len, s.dtype, s.root);
      case kScatter: return scatter(p, algo, s.send, s.recv, len, s.dtype, s.root);
      default: return internal_error("unknown operation kind");
    }
  }
  // A slice of every block: run on packed temporaries.
  const uint64_t packed = uint64_t(n) * len * es;
  const bool root = p.rank() == s.root;
  std::vector<char> in, out;
  switch (s.kind) {
    case kAllGather:
      out.resize(packed);
      if (strat) {
        KF_RETURN_IF_ERROR(strategy_all_gather(p, algo, s.strategy_opts, *s.hosts, st,
                                               at(s.send, b, es), out.data(), len, s.dtype));
      } else {
        KF_RETURN_IF_ERROR(all_gather(p, algo, at(s.send, b, es), out.data(), len, s.dtype));
      }
      unpack(s.recv, out.data(), n, s.count, b, len, es);
      return Status::ok();
    case kReduceScatter:
      in.resize(packed);
      pack(in.data(), s.send, n, s.count, b, len, es);
      return reduce_scatter(p, algo, in.data(), at(s.recv, b, es), len, s.dtype, op);
    case kAllToAll:
      in.resize(packed);
      out.resize(packed);
      pack(in.data(), s.send, n, s.count, b, len, es);
      KF_RETURN_IF_ERROR(all_to_all(p, algo, in.data(), out.data(), len, s.dtype));
      unpack(s.recv, out.data(), n, s.count, b, len, es);
      return Status::ok();
    case kGather:
      if (root) out.resize(packed);
      KF_RETURN_IF_ERROR(gather(p, algo, at(s.send, b, es), root ? out.data() : nullptr, len,
                                s.dtype, s.root));
      if (root) unpack(s.recv, out.data(), n, s.count, b, len, es);
      return Status::ok();
    case kScatter:
      if (root) {
        in.resize(packed);
        pack(in.data(), s.send, n, s.count, b, len, es);
      }
      return scatter(p, algo, root ? in.data() : nullptr, at(s.recv, b, es), len, s.dtype, s.root);
    default:
      return internal_error("unknown operation kind");
  }
}

}  // namespace kf
