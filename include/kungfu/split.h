/*
 * libkungfu communicator split: new communicators made of some ranks of an
 * existing one, as MPI_Comm_split does.
 *
 * A split communicator is a full communicator: it has its own connections
 * (TCP between hosts, shared memory between the members on one host), its own
 * named-operation engine and its own last-error text. Every collective works
 * on it, with ranks numbered inside it. It runs concurrently with its parent
 * and with its siblings (from different threads, like any two
 * communicators), and it stays valid after the parent is destroyed: destroy
 * it with kf_comm_destroy() like any other.
 *
 * Splitting is collective over the parent: every rank of the parent must call
 * the same split function, in the same order as its other blocking calls on
 * the parent (it is serialised with them). Set-up goes through the parent; no
 * rendezvous server is involved, and the job secret is inherited. Either every
 * rank of the parent succeeds, or every rank returns an error and no rank keeps
 * a new communicator (an agreement over the parent decides). The connection
 * set-up is bounded by the smaller of the new communicator's timeout and half
 * the parent's timeout.
 *
 * Argument errors (KF_ERR_INVALID_ARGUMENT) are detected locally, before any
 * communication: a rank that fails them does not take part in the split, so
 * the other ranks then fail with KF_ERR_TIMEOUT after the parent's timeout
 * (and the parent is broken). Pass valid arguments on every rank.
 *
 * Example: even and odd ranks form two communicators, in reverse rank order.
 *
 *     kf_comm_t half;
 *     int rank, size;
 *     kf_comm_rank(world, &rank);
 *     kf_comm_size(world, &size);
 *     if (kf_comm_split(world, rank % 2, size - rank, NULL, &half) != KF_SUCCESS)
 *         fprintf(stderr, "split: %s\n", kf_comm_last_error(world));
 *     kf_all_reduce(half, buf, buf, n, KF_FLOAT32, KF_SUM);
 *     kf_comm_destroy(half);
 *
 * C99; compiles on its own as C and as C++.
 */
#ifndef KUNGFU_SPLIT_H
#define KUNGFU_SPLIT_H

#include "kungfu/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The color of a rank that joins no new communicator (MPI_UNDEFINED). */
#define KF_SPLIT_NONE (-1)

/**
 * Splits `comm` by color (collective over comm): the ranks that pass the same
 * color form one new communicator, in which they are ordered by `key` and,
 * for equal keys, by their rank in `comm`.
 *
 * @param[in]  comm     Parent communicator. Not NULL; must be live.
 * @param[in]  color    >= 0 to join the communicator of that color, or
 *                      KF_SPLIT_NONE to join none (*newcomm is set to NULL
 *                      and the call returns KF_SUCCESS once the split is done).
 *                      Other negative values are KF_ERR_INVALID_ARGUMENT.
 * @param[in]  key      Any int: orders the ranks of the new communicator.
 * @param[in]  config   Options of the new communicator, or NULL. An unset
 *                      (or NULL) timeout inherits the parent's timeout; an
 *                      unset name gives "<parent name>/split<color>". The
 *                      config is read during the call only.
 * @param[out] newcomm  Receives the new communicator (owned by the caller,
 *                      destroy with kf_comm_destroy), or NULL with
 *                      KF_SPLIT_NONE or on failure. Not NULL.
 * @return KF_SUCCESS; KF_ERR_INVALID_ARGUMENT (bad comm, NULL newcomm, bad
 *         color or config: detected locally, see above); KF_ERR_REMOTE (a
 *         rank failed, the detail names it), KF_ERR_TIMEOUT, KF_ERR_SYSTEM,
 *         KF_ERR_ABORTED (the parent was already broken; its cause instead
 *         if no call reported it yet, as for every call). Failures other than
 *         argument errors are reported on every rank of the parent. The
 *         detail is in kf_comm_last_error(comm) (or kf_comm_last_error(NULL)
 *         when comm is not a live communicator).
 */
KF_API kf_status_t kf_comm_split(kf_comm_t comm, int color, int key, const kf_config_t* config,
                                 kf_comm_t* newcomm);

/**
 * Splits `comm` by host (collective over comm): the ranks on this process's
 * host (same host identity as in the topology, see kungfu/topology.h) form
 * the new communicator, ordered by their rank in comm. Its ranks are the
 * local ranks, and its data path is shared memory. Same as kf_comm_split()
 * with color = host index and key = rank.
 *
 * @param[in]  comm     Parent communicator. Not NULL; must be live.
 * @param[in]  config   As kf_comm_split(); the default name is
 *                      "<parent name>/host<host index>".
 * @param[out] newcomm  Receives the new communicator. Not NULL.
 * @return as kf_comm_split().
 */
KF_API kf_status_t kf_comm_split_host(kf_comm_t comm, const kf_config_t* config,
                                      kf_comm_t* newcomm);

/**
 * Splits `comm` across hosts (collective over comm): the ranks with this
 * process's local rank on every host form the new communicator, one rank
 * per host (of the hosts that have that many ranks), ordered by host index.
 * Same as kf_comm_split() with color = local rank and key = host index.
 *
 * @param[in]  comm     Parent communicator. Not NULL; must be live.
 * @param[in]  config   As kf_comm_split(); the default name is
 *                      "<parent name>/cross<local rank>".
 * @param[out] newcomm  Receives the new communicator. Not NULL.
 * @return as kf_comm_split().
 */
KF_API kf_status_t kf_comm_split_cross(kf_comm_t comm, const kf_config_t* config,
                                       kf_comm_t* newcomm);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KUNGFU_SPLIT_H */
