// Strategy selection and dispatch (see strategy.h).
#include "algo/strategy.h"

#include "algo/common.h"
#include "algo/sub_peers.h"

namespace kf {

const char* strategy_name(Strategy s) {
  switch (s) {
    case Strategy::kAuto:
      return "auto";
    case Strategy::kFlat:
      return "flat";
    case Strategy::kHierarchical:
      return "hier";
    case Strategy::kTree:
      return "tree";
    case Strategy::kMultiTree:
      return "multi-tree";
  }
  return "unknown";
}

bool parse_strategy(const std::string& text, Strategy* out) {
  if (text == "auto") {
    *out = Strategy::kAuto;
  } else if (text == "flat") {
    *out = Strategy::kFlat;
  } else if (text == "hier" || text == "hierarchical") {
    *out = Strategy::kHierarchical;
  } else if (text == "tree") {
    *out = Strategy::kTree;
  } else if (text == "multi-tree") {
    *out = Strategy::kMultiTree;
  } else {
    return false;
  }
  return true;
}

Strategy resolve_strategy(Strategy s, const HostLayout& hosts, int size, size_t bytes,
                          const StrategyOptions& so) {
  // A layout that does not describe this group, or a group too large for the
  // phased tags of SubPeers, can only run flat.
  if (size < 2 || hosts.size() != size || size > kMaxGroupSize) return Strategy::kFlat;
  if (s != Strategy::kAuto) return s;
  const bool multi_host = hosts.host_count() > 1 && hosts.max_local_size() > 1;
  return multi_host && bytes >= so.hier_threshold_bytes ? Strategy::kHierarchical : Strategy::kFlat;
}

Status strategy_all_reduce(Peers& p, const AlgoOptions& o, const StrategyOptions& so,
                           const HostLayout& hosts, Strategy s, const void* send, void* recv,
                           size_t count, kf_dtype_t dtype, kf_op_t op) {
  switch (resolve_strategy(s, hosts, p.size(), count * dtype_size(dtype), so)) {
    case Strategy::kHierarchical:
      return hier_all_reduce(p, o, hosts, so.hier_slice_bytes, send, recv, count, dtype, op);
    case Strategy::kTree:
      return tree_all_reduce(p, o, hosts, 1, send, recv, count, dtype, op);
    case Strategy::kMultiTree:
      return tree_all_reduce(p, o, hosts, hosts.host_count(), send, recv, count, dtype, op);
    case Strategy::kAuto:
    case Strategy::kFlat:
      break;
  }
  return all_reduce(p, o, send, recv, count, dtype, op);
}

Status strategy_broadcast(Peers& p, const AlgoOptions& o, const StrategyOptions& so,
                          const HostLayout& hosts, Strategy s, const void* send, void* recv,
                          size_t count, kf_dtype_t dtype, int root) {
  const Strategy r = resolve_strategy(s, hosts, p.size(), count * dtype_size(dtype), so);
  if (is_flat(r)) {
    return broadcast(p, o, send, recv, count, dtype, root);
  }
  return hier_broadcast(p, o, hosts, send, recv, count, dtype, root);
}

Status strategy_all_gather(Peers& p, const AlgoOptions& o, const StrategyOptions& so,
                           const HostLayout& hosts, Strategy s, const void* send, void* recv,
                           size_t sendcount, kf_dtype_t dtype) {
  // The size that decides is the result's: that is what crosses the links.
  const size_t bytes = sendcount * dtype_size(dtype) * static_cast<size_t>(p.size());
  const Strategy r = resolve_strategy(s, hosts, p.size(), bytes, so);
  if (is_flat(r)) {
    return all_gather(p, o, send, recv, sendcount, dtype);
  }
  return hier_all_gather(p, o, hosts, send, recv, sendcount, dtype);
}

}  // namespace kf
