// Strategies: how a collective uses the hosts of a job. "Flat" runs the
// algorithms of collectives.h over all ranks as equals; the others split the
// work along a HostLayout so that inter-host links carry each byte as few
// times as possible (hierarchical), or follow KungFu's tree strategies.
//
// Which collectives they change:
//  - all_reduce: every strategy (see below);
//  - broadcast and all_gather: kHierarchical, kTree and kMultiTree all run
//    the hierarchical versions (a tree over hosts is what they are);
//  - every other collective stays flat.
//
// kAuto: hierarchical when the job spans more than one host, some host has
// more than one rank, and the message has at least hier_threshold_bytes;
// flat otherwise.
#pragma once

#include <cstddef>
#include <string>

#include "algo/collectives.h"
#include "algo/host_layout.h"
#include "algo/peers.h"
#include "kungfu/types.h"

namespace kf {

// Values match kf_strategy_t (include/kungfu/strategy.h).
enum class Strategy { kAuto = 0, kFlat = 1, kHierarchical = 2, kTree = 3, kMultiTree = 4 };
constexpr int kStrategyCount = 5;
const char* strategy_name(Strategy s);
// Parses auto|flat|hier|hierarchical|tree|multi-tree; false if unknown.
bool parse_strategy(const std::string& text, Strategy* out);

struct StrategyOptions {
  size_t hier_threshold_bytes = 32 << 10;  // kAuto: hierarchical from this size on
  // The hierarchical all_reduce pipelines slices of this size: the
  // intra-host phases of one slice overlap the inter-host phase of another.
  size_t hier_slice_bytes = 1 << 20;
};

// The strategy that runs a message of `bytes`: resolves kAuto, and falls
// back to kFlat where the layout does not fit (size mismatch, one rank, a
// group too large for phased tags).
Strategy resolve_strategy(Strategy s, const HostLayout& hosts, int size, size_t bytes,
                          const StrategyOptions& so);
// Whether a resolved strategy runs the plain algorithms (algo/select.cc).
inline bool is_flat(Strategy s) { return s == Strategy::kFlat || s == Strategy::kAuto; }

// Entry points: resolve `s` and run the chosen algorithm. `hosts` must
// describe the ranks of `p` (same size on every rank).
Status strategy_all_reduce(Peers& p, const AlgoOptions& o, const StrategyOptions& so,
                           const HostLayout& hosts, Strategy s, const void* send, void* recv,
                           size_t count, kf_dtype_t dtype, kf_op_t op);
Status strategy_broadcast(Peers& p, const AlgoOptions& o, const StrategyOptions& so,
                          const HostLayout& hosts, Strategy s, const void* send, void* recv,
                          size_t count, kf_dtype_t dtype, int root);
Status strategy_all_gather(Peers& p, const AlgoOptions& o, const StrategyOptions& so,
                           const HostLayout& hosts, Strategy s, const void* send, void* recv,
                           size_t sendcount, kf_dtype_t dtype);

// The algorithms themselves (tests call them directly). All handle count 0,
// in place (send == recv; for all_gather send == recv + rank * sendcount),
// one rank, one host and unequal hosts.

// hierarchical.cc: intra-host reduce-scatter into min_local_size() shards,
// an all_reduce of each shard among the same-local-rank ranks of all hosts
// (one cross group per local rank, all at once), intra-host all-gather.
// Messages above one slice run as a pipeline of slices.
Status hier_all_reduce(Peers& p, const AlgoOptions& o, const HostLayout& hosts, size_t slice_bytes,
                       const void* send, void* recv, size_t count, kf_dtype_t dtype, kf_op_t op);
// hier_gather.cc: broadcast among root and the other hosts' leaders (local
// rank 0), then within every host from its leader.
Status hier_broadcast(Peers& p, const AlgoOptions& o, const HostLayout& hosts, const void* send,
                      void* recv, size_t count, kf_dtype_t dtype, int root);
// Equal hosts: all_gather among same-local-rank ranks, then within each host.
// Unequal hosts: gather to each host's leader, leaders exchange host blocks,
// leaders broadcast within their host.
Status hier_all_gather(Peers& p, const AlgoOptions& o, const HostLayout& hosts, const void* send,
                       void* recv, size_t sendcount, kf_dtype_t dtype);

// tree_strategies.cc (KungFu's BinaryTreeStar and MultiBinaryTreeStar): the
// buffer is cut into `trees` slices; slice t is reduced up and broadcast down
// a binary tree over the hosts rooted at host t mod H, where every host's
// leader (local rank t mod its size) collects and feeds its host as a star.
// trees = 1 is the plain binary-tree-star strategy.
Status tree_all_reduce(Peers& p, const AlgoOptions& o, const HostLayout& hosts, int trees,
                       const void* send, void* recv, size_t count, kf_dtype_t dtype, kf_op_t op);

}  // namespace kf
