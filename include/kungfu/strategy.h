/*
 * libkungfu collective strategies: how all_reduce, broadcast and all_gather
 * use the hosts of a job (see kf_comm_host_count() in kungfu/topology.h).
 *
 * - KF_STRATEGY_FLAT: every rank is an equal member of one ring or tree
 *   (ring for large messages, recursive doubling or binomial trees for
 *   small ones; the shared-memory collectives when all ranks share a host).
 * - KF_STRATEGY_HIERARCHICAL: all_reduce = reduce-scatter within each host
 *   (shared memory), then all_reduce of each shard among the ranks with the
 *   same local rank on every host (all local ranks at once, so the traffic
 *   spreads over them), then all-gather within each host. Inter-host links
 *   carry each byte once: on 2 hosts x 2 ranks a flat ring sends 1.5 times
 *   as much across. Broadcast goes to one rank per host first, then within
 *   hosts; all_gather gathers across hosts, then within hosts.
 * - KF_STRATEGY_TREE (KungFu's binary-tree-star): all_reduce reduces up and
 *   broadcasts down a binary tree over the hosts; within a host the ranks
 *   form a star around a leader.
 * - KF_STRATEGY_MULTI_TREE (KungFu's multi-binary-tree-star): one such tree
 *   per host, each rooted at another host with other leaders, each carrying
 *   a slice of the buffer, to spread the load.
 * - KF_STRATEGY_AUTO (default): hierarchical when the job spans more than one
 *   host, some host runs more than one rank and the message has at least
 *   KF_HIER_THRESHOLD_BYTES; flat otherwise.
 * Tree strategies change all_reduce; for broadcast and all_gather they mean
 * hierarchical. Other collectives are always flat. Every strategy gives
 * every rank the same bits; results agree with flat up to floating-point
 * rounding (another order of additions).
 *
 * The initial strategy comes from the environment knob KF_STRATEGY (auto,
 * flat, hier, tree, multi-tree). C99; compiles on its own as C and as C++.
 */
#ifndef KUNGFU_STRATEGY_H
#define KUNGFU_STRATEGY_H

#include "kungfu/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Collective strategies. Values are part of the ABI. */
typedef enum kf_strategy {
    KF_STRATEGY_AUTO = 0,         /**< Chosen per operation by topology and message size. */
    KF_STRATEGY_FLAT = 1,         /**< All ranks as equals (ring, trees, shared memory). */
    KF_STRATEGY_HIERARCHICAL = 2, /**< Intra-host, then inter-host, then intra-host phases. */
    KF_STRATEGY_TREE = 3,         /**< all_reduce over a binary tree of hosts, star in each host. */
    KF_STRATEGY_MULTI_TREE = 4    /**< One rotated tree per host, each carrying a slice. */
} kf_strategy_t;

/**
 * Changes the strategy of `comm` at run time. Collective: every rank must
 * call it, in the same place of its sequence of blocking collectives, with
 * the same value; the new strategy applies from the next collective on, on
 * every rank alike. The ranks compare their values (one small all_reduce).
 * Asynchronous operations (kungfu/async.h) take the strategy in force when
 * they are submitted: those submitted before the call keep the old one (and
 * may still be pending), those submitted after it returns use the new one.
 * So every rank must submit each async operation on the same side of the
 * switch; a rank that does not fails that operation with a signature
 * mismatch naming the strategy, never a hang.
 * @param[in] comm      Communicator. Not NULL.
 * @param[in] strategy  The new strategy, a kf_strategy_t value.
 * @return KF_SUCCESS; KF_ERR_INVALID_ARGUMENT (bad comm, or `strategy` is not
 *         a kf_strategy_t value: this rank's strategy is unchanged and the
 *         other ranks fail with KF_ERR_INVALID_USAGE); KF_ERR_INVALID_USAGE
 *         (the ranks passed different values: every rank fails and keeps its
 *         previous strategy; kf_comm_last_error() gives the range); or the
 *         errors of a collective (KF_ERR_REMOTE, KF_ERR_TIMEOUT, ...).
 */
KF_API kf_status_t kf_comm_set_strategy(kf_comm_t comm, kf_strategy_t strategy);

/**
 * Gets the strategy of `comm`: KF_STRATEGY at init, or the last value set
 * with kf_comm_set_strategy(). KF_STRATEGY_AUTO stays AUTO (the choice is
 * made per operation). Thread safe.
 * @param[in]  comm      Communicator. Not NULL.
 * @param[out] strategy  Receives the strategy. Not NULL.
 * @return KF_SUCCESS, KF_ERR_INVALID_ARGUMENT (bad comm, NULL strategy).
 */
KF_API kf_status_t kf_comm_get_strategy(kf_comm_t comm, kf_strategy_t* strategy);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KUNGFU_STRATEGY_H */
