/*
 * libkungfu sparse all_reduce: top-k gradient sparsification with error
 * feedback, flat or hierarchical (HiTopKComm, Shi et al., MLSys 2021).
 *
 * Each rank selects the k entries of largest magnitude of its float32
 * gradient with MSTopK (an approximate top-k; see kungfu/sparse.h), the
 * ranks exchange only those (value, index) pairs, and every rank ends with
 * the same dense sum of what was sent. With a residual buffer the entries
 * that were not sent are kept and added to the next call's gradient (error
 * feedback), so no gradient mass is lost, only delayed.
 *
 * Algorithms (kf_sparse_algorithm_t):
 *  - flat: every rank selects k of its whole gradient; the pairs are
 *    all-gathered among all ranks and added into the output.
 *  - hier: the ranks of each host first reduce-scatter their gradients
 *    (dense, over shared memory); each rank selects ceil(k / ranks per host)
 *    (at most count / ranks per host) of its shard of the host sum; the
 *    ranks with the same local rank all-gather their pairs across hosts (all
 *    local ranks at once, so every host's link is used by all its ranks);
 *    the ranks of a host all-gather those pairs, and every rank adds them
 *    into its output. Inter-host traffic is about k pairs per host instead
 *    of k per rank. Needs the same number of ranks on every host.
 *  - auto: hier when the communicator spans several hosts with several ranks
 *    each (and the same number on every host), else flat.
 *  - dense: a plain all_reduce of (gradient + residual).
 * Every algorithm falls back to dense when count < KF_SPARSE_MIN_ELEMS
 * (default 65536; see `kfinfo`) or when 2k >= count.
 *
 * What the residual holds after a call:
 *  - flat: (sendbuf + residual before the call) with the sent entries set to
 *    0. Element by element, sent + residual = sendbuf + old residual.
 *  - hier: the rank with local rank l owns shard l of the intra-host split
 *    of the elements 0 .. count-1 into balanced pieces (piece l starts at
 *    l*(count/L) + min(l, count%L), L = ranks per host). Inside that shard only, its
 *    residual holds the host-summed gradient (the sum of the sendbufs of the
 *    host's ranks) plus the old residual, minus what it sent; outside it the
 *    residual is neither read nor written. Start with a zeroed buffer and keep
 *    passing the same one.
 *  - dense fallback: the residual is added to the gradient, then zeroed.
 *
 * Example (one training step, 1% density, with error feedback):
 *
 *     float* residual = calloc(n, sizeof(float));          // once
 *     kf_sparse_options_t opt = KF_SPARSE_OPTIONS_INITIALIZER;
 *     uint64_t k = n / 100;
 *     kf_status_t s = kf_sparse_all_reduce(comm, grad, grad, n, KF_AVG, k,
 *                                          residual, &opt);
 *     if (s != KF_SUCCESS) fprintf(stderr, "%s\n", kf_comm_last_error(comm));
 *
 * C99; compiles on its own as C and as C++. Thread safety as for the
 * blocking collectives of kungfu.h.
 */
#ifndef KUNGFU_SPARSE_ALLREDUCE_H
#define KUNGFU_SPARSE_ALLREDUCE_H

#include <stddef.h>
#include <stdint.h>

#include "kungfu/async.h"
#include "kungfu/types.h"
#include "kungfu/version.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Which sparse all_reduce algorithm to run. Values are part of the ABI. */
typedef enum kf_sparse_algorithm {
    KF_SPARSE_AUTO = 0,  /**< hier on several hosts x several ranks, else flat. */
    KF_SPARSE_FLAT = 1,  /**< All-gather of every rank's pairs. */
    KF_SPARSE_HIER = 2,  /**< HiTopKComm; KF_ERR_INVALID_USAGE if hosts hold different rank counts. */
    KF_SPARSE_DENSE = 3  /**< Always the dense fallback (for comparisons). */
} kf_sparse_algorithm_t;

/** Magic number that marks an initialised kf_sparse_options_t. */
#define KF_SPARSE_OPTIONS_MAGIC 0x6b667370u /* "kfsp" */

/**
 * Options of kf_sparse_all_reduce. Initialise with
 * KF_SPARSE_OPTIONS_INITIALIZER, then set what you need: the library reads
 * only the fields the caller's `size` covers and defaults the rest. All
 * ranks must pass the same values.
 */
typedef struct kf_sparse_options {
    size_t size;         /**< sizeof(kf_sparse_options_t), set by the initializer. */
    uint32_t magic;      /**< KF_SPARSE_OPTIONS_MAGIC, set by the initializer. */
    uint32_t version;    /**< KF_VERSION_CODE of the headers, set by the initializer. */
    int32_t algorithm;   /**< A kf_sparse_algorithm_t; default KF_SPARSE_AUTO. */
    int32_t rounds;      /**< MSTopK threshold-search rounds, 1..64; 0 = default (20). */
    uint64_t seed;       /**< MSTopK seed of the random fill window (deterministic per seed). */
    int32_t threads;     /**< MSTopK threads; 0 = chosen by the library. */
    int32_t reserved;    /**< Must be 0. */
} kf_sparse_options_t;

/** Initial value of a kf_sparse_options_t: every option at its default. */
#define KF_SPARSE_OPTIONS_INITIALIZER \
    { sizeof(kf_sparse_options_t), KF_SPARSE_OPTIONS_MAGIC, (uint32_t)KF_VERSION_CODE, \
      KF_SPARSE_AUTO, 0, 0, 0, 0 }

/**
 * Sparse all_reduce of float32 gradients (blocking, collective: every rank
 * calls it with the same count, op, k, options, and a residual on all ranks
 * or on none).
 *
 * @param[in]     comm      Communicator.
 * @param[in]     sendbuf   count gradients of this rank. Not modified.
 * @param[out]    recvbuf   count floats: the sum (or average) over ranks of
 *                          the sent entries; the same bits on every rank.
 *                          May equal sendbuf (in place).
 * @param[in]     count     Number of elements, at most 4294967295 (indices
 *                          travel as 32-bit).
 * @param[in]     op        KF_SUM or KF_AVG (sum divided by the rank count).
 * @param[in]     k         Entries each rank sends (flat), or each host
 *                          (hier: ceil(k / ranks per host) per rank, at
 *                          most count / ranks per host);
 *                          k = density * count. 1 .. count.
 * @param[in,out] residual  NULL (no error feedback) or count floats owned by
 *                          the caller, zeroed before the first call; updated
 *                          as described above. Must not overlap sendbuf or
 *                          recvbuf.
 * @param[in]     options   NULL for defaults, or initialised with
 *                          KF_SPARSE_OPTIONS_INITIALIZER.
 * @return KF_SUCCESS; KF_ERR_INVALID_ARGUMENT for a NULL buffer, a bad op,
 *         k or count, overlapping residual, bad options, or a non-finite
 *         gradient (NaN/Inf: MSTopK cannot rank it); KF_ERR_INVALID_USAGE
 *         for KF_SPARSE_HIER with unequal hosts, ranks that disagree, or a
 *         peer whose gradient was not finite (reported on every rank, naming
 *         it; the communicator stays usable);
 *         KF_ERR_REMOTE when a peer failed or sent malformed pairs;
 *         KF_ERR_TIMEOUT; KF_ERR_ABORTED.
 */
KF_API kf_status_t kf_sparse_all_reduce(kf_comm_t comm, const float* sendbuf, float* recvbuf,
                                        uint64_t count, kf_op_t op, uint64_t k, float* residual,
                                        const kf_sparse_options_t* options);

/**
 * The sparse all_reduce as an asynchronous named operation (kungfu/async.h):
 * the same arguments, checks and results as kf_sparse_all_reduce(), plus a
 * name and the async options. It runs as one partition (the whole gradient:
 * top-k selection needs all of it) on the communicator's async engine,
 * scheduled by priority with the other async operations of `comm`, and
 * concurrently with them and with blocking calls. Every rank must submit
 * it under the same name, in the same order as its other operations of
 * that name, with the same count, op, k, options and residual presence
 * (a difference fails the request with a signature mismatch on every rank).
 * sendbuf, recvbuf and residual must stay valid and untouched until the
 * request completes.
 *
 * @param[in]     comm      Communicator.
 * @param[in]     name      Operation name (rules of kungfu/async.h: not
 *                          empty, at most KF_OP_NAME_MAX bytes, not
 *                          starting with "kf.").
 * @param[in]     sendbuf   As for kf_sparse_all_reduce().
 * @param[out]    recvbuf   As for kf_sparse_all_reduce(); written by the
 *                          time the request completes.
 * @param[in]     count     As for kf_sparse_all_reduce().
 * @param[in]     op        KF_SUM or KF_AVG.
 * @param[in]     k         As for kf_sparse_all_reduce().
 * @param[in,out] residual  As for kf_sparse_all_reduce(); updated by the
 *                          time the request completes.
 * @param[in]     options   NULL or initialised with
 *                          KF_SPARSE_OPTIONS_INITIALIZER (read at the call).
 * @param[in]     opts      NULL for defaults, or initialised with
 *                          KF_OP_OPTIONS_INITIALIZER: priority and callback
 *                          apply; partition_bytes is ignored (one partition).
 * @param[out]    req       Receives the request (free it with
 *                          kf_request_free()), or NULL to rely on the
 *                          callback alone. Set to NULL on failure.
 * @return KF_SUCCESS when submitted (the outcome comes from
 *         kf_request_wait()/kf_request_test(): the codes of
 *         kf_sparse_all_reduce()); KF_ERR_INVALID_ARGUMENT for the argument
 *         errors of kf_sparse_all_reduce(), a bad name or bad opts;
 *         KF_ERR_ABORTED when the communicator is broken or being destroyed.
 */
KF_API kf_status_t kf_isparse_all_reduce(kf_comm_t comm, const char* name, const float* sendbuf,
                                         float* recvbuf, uint64_t count, kf_op_t op, uint64_t k,
                                         float* residual, const kf_sparse_options_t* options,
                                         const kf_op_options_t* opts, kf_request_t* req);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KUNGFU_SPARSE_ALLREDUCE_H */
