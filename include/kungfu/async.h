/*
 * libkungfu asynchronous named collectives.
 *
 * Every collective here is submitted under a name chosen by the caller and
 * returns at once with a request handle. Ranks match operations by
 * (name, n-th submission of that name), with no coordinator: ranks may
 * submit in any order, from several threads, and a name may be reused every
 * training step. The engine cuts large operations into partitions, runs ready
 * partitions in priority order within a credit window (bytes this rank
 * initiates at once), and lets a newly submitted urgent operation overtake
 * queued partitions of less urgent ones. While the running partitions and
 * the next are of different operations of one priority, the window widens
 * to twice the credit and at least two partitions (at most four), so
 * that consecutive operations of equal priority overlap.
 *
 * Names: not NULL, not empty, at most KF_OP_NAME_MAX bytes, and not starting
 * with "kf." (reserved for the library's blocking calls). The n-th submission
 * of a name on one rank matches the n-th submission of that name on every
 * other rank, so operations of one name must be submitted in the same order
 * on every rank (from one thread, or ordered by the caller); different names
 * need no order at all.
 *
 * Signatures: the kind of collective, count, dtype, op, root and partition
 * size of a named operation are compared across ranks. A difference ends
 * that operation on every rank with KF_ERR_INVALID_USAGE and an error text
 * naming the operation and what differs (e.g. "count 100 on rank 0 vs 99 on
 * rank 2"); other operations go on. A count of 0 is a real operation (it
 * takes part in the matching and the checks).
 *
 * Strategies (kungfu/strategy.h): partitions of kf_iall_reduce,
 * kf_ibroadcast and kf_iall_gather run the communicator's strategy as it is
 * when the operation is submitted (hierarchical on several hosts, ...); the
 * strategy is part of the signature. kf_comm_set_strategy() may run while
 * operations are pending: they keep the strategy of their submission. Every
 * rank must submit an operation on the same side of a switch.
 *
 * Other named async operations: kf_isparse_all_reduce()
 * (kungfu/sparse_allreduce.h) runs as one partition, scheduled with these
 * by priority.
 *
 * Stalls: when an operation was submitted here but not yet on some ranks for
 * longer than KF_STALL_WARN_MS, a warning names it and the missing ranks. At
 * the operation timeout (KF_TIMEOUT_MS, or kf_config_t.timeout_ms, counted
 * from submission) it completes with KF_ERR_TIMEOUT on the ranks that
 * submitted it, naming the ranks that never did. Such a timeout does not
 * break the communicator; a lost peer does (KF_ERR_REMOTE on every pending
 * request, KF_ERR_ABORTED afterwards, as for blocking calls).
 *
 * Buffer ownership: buffers stay the caller's. From submission until the
 * request completes (test/wait report a final status, or the callback has
 * returned) the engine may read the send buffer and write the receive
 * buffer at any time: do not touch either. After completion the engine never
 * touches them again, whatever the status.
 *
 * Destroying a communicator waits for its pending operations (at most the
 * operation timeout), then fails what is left with KF_ERR_ABORTED. Requests
 * stay valid after that (test, wait, error text, free).
 *
 * Fusion: a kf_iall_reduce of at most KF_FUSION_THRESHOLD_BYTES (default
 * 16 KiB) that is one partition is fused. At submission it sends its data to
 * every peer; the frames of fused operations submitted close together travel
 * as one transfer per peer, and each rank combines the contributions in rank
 * order into the operation's own receive buffer (the same bits on every
 * rank; one message latency). Held frames leave when a thread waits for or
 * tests any request of the communicator, when KF_FUSION_BUNDLE_BYTES are
 * held for one peer, or KF_FUSION_CYCLE_US after the first one, so
 * "submit many, then wait" fuses them all and adds no delay. Whether an
 * operation is fused is part of its signature: KF_FUSION_THRESHOLD_BYTES
 * must be equal on every rank (0 turns fusion off).
 *
 * Performance: when every rank of the communicator shares one host,
 * kf_iall_reduce runs through the shared-memory arena of the blocking
 * all_reduce (a staging area of its own), in an order the ranks agree on
 * through shared memory: partitions of operations that every rank submitted,
 * the most urgent first, one at a time. There fusion takes another form:
 * when the most urgent ready operation is one partition, it and the
 * single-partition ready operations next in priority order (of one dtype
 * and op; in all at most KF_FUSION_PASS_BYTES, default 4 MiB, and the first
 * one's partition size; each of at most a staging buffer, KF_SHM_STAGING_BYTES:
 * by default 256 KiB per local rank, at least 512 KiB) run together as one
 * pass over their buffers laid end to end, sharing its barriers. A thread
 * waiting for a request runs them itself; when nobody waits, a thread of
 * the communicator does, 200 us after a large submission (KF_FUSION_CYCLE_US
 * after a small one), or, while waiting threads have been running them,
 * within 8 to 64 cycles (the longer they do, the rarer its looks).
 * KF_ASYNC_ARENA=0 turns this off. Everything else moves over the peer
 * rings (shared memory or TCP). Small single-partition operations (up to
 * 64 KiB) start at submission; larger ones once every rank submitted them.
 *
 * Knobs (see kfinfo): KF_PARTITION_BYTES (default partition size, 2 MiB),
 * KF_CREDIT_BYTES (credit window, 1 MiB), KF_STALL_WARN_MS, KF_FUSION_THRESHOLD_BYTES,
 * KF_FUSION_BUNDLE_BYTES, KF_FUSION_PASS_BYTES, KF_FUSION_CYCLE_US,
 * KF_ASYNC_ARENA.
 *
 * C99; compiles on its own as C and as C++.
 */
#ifndef KUNGFU_ASYNC_H
#define KUNGFU_ASYNC_H

#include <stddef.h>
#include <stdint.h>

#include "kungfu/types.h"
#include "kungfu/version.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Longest operation name accepted, in bytes (without the terminating NUL). */
#define KF_OP_NAME_MAX 256

/**
 * Opaque handle of one submitted operation. Created by a kf_i* call, released
 * by kf_request_free() once complete. A handle may be tested and waited for
 * from any thread, and stays valid after its communicator is destroyed.
 * As with a communicator, freeing it must not race with another call on the
 * same handle (a free while another thread still is inside kf_request_wait()
 * on it is undefined behaviour), and kf_comm_destroy() must not race with a
 * call on one of the communicator's requests.
 */
typedef struct kf_request* kf_request_t;

/**
 * Completion callback. Called exactly once per operation, with its final
 * status, on an engine thread or on a thread inside kf_request_wait*(),
 * kf_request_test() or a kf_i* call: an operation may complete inside its
 * own kf_i* call, its callback running before that call returns (and before
 * it stores the request handle); on a one-rank communicator a small
 * operation does, and so does a fused all_reduce whose peers' data is all in
 * already, and on shared memory a tiny one whose peers submitted it already
 * (unless the kf_i* call is made from such a callback: then another thread
 * completes it, so that callbacks that submit again never nest). So a
 * caller must not hold, across a kf_i* call or kf_request_test(), a lock
 * that its callback takes. Inside a callback kf_comm_destroy() is refused
 * (KF_ERR_INVALID_USAGE). The callback runs before the request becomes
 * complete: inside it, kf_request_test() on `req` still reports
 * KF_IN_PROGRESS, and it must not wait for or free `req`. It may submit new
 * operations and test requests, but not wait for one still in progress (the
 * thread running it may be the one that would have to complete it):
 * kf_request_wait*() called inside a callback return KF_ERR_INVALID_USAGE at
 * once unless what they wait for is complete. Keep it short: it delays the
 * thread that runs it.
 * @param req        The request (NULL when the operation was submitted with
 *                   a NULL request pointer, fire-and-forget).
 * @param status     Final status, as kf_request_wait() will return it.
 * @param user_data  kf_op_options_t.user_data.
 */
typedef void (*kf_request_callback_t)(kf_request_t req, kf_status_t status, void* user_data);

/** Magic number that marks an initialised kf_op_options_t. */
#define KF_OP_OPTIONS_MAGIC 0x6b666f70u /* "kfop" */

/**
 * Options of one asynchronous operation. Always initialise with
 * KF_OP_OPTIONS_INITIALIZER, then set the fields you need: the library reads
 * only the fields the caller's `size` covers, so programs built against
 * older headers keep working. NULL options = all defaults.
 */
typedef struct kf_op_options {
    size_t size;               /**< sizeof(kf_op_options_t), set by the initializer. */
    uint32_t magic;            /**< KF_OP_OPTIONS_MAGIC, set by the initializer. */
    uint32_t version;          /**< KF_VERSION_CODE of the headers, set by the initializer. */
    int32_t priority;          /**< Lower = more urgent (e.g. the layer index); default 0.
                                    Local to this rank: ranks may differ. */
    uint64_t partition_bytes;  /**< Partition size in bytes; 0 = engine default
                                    (KF_PARTITION_BYTES). Must be equal on every
                                    rank (checked with the signature). */
    kf_request_callback_t callback; /**< Called once on completion; NULL = none. */
    void* user_data;           /**< Passed to callback. */
} kf_op_options_t;

/** Initial value of a kf_op_options_t: priority 0, default partitions, no callback. */
#define KF_OP_OPTIONS_INITIALIZER \
    { sizeof(kf_op_options_t), KF_OP_OPTIONS_MAGIC, (uint32_t)KF_VERSION_CODE, 0, 0, NULL, NULL }

/* ------------------------------------------------------------------------ */
/* Submission                                                               */
/*                                                                          */
/* Common parameters of every kf_i* call:                                   */
/*   comm     Communicator.                                                 */
/*   name     Operation name (see the top of this header). Copied.          */
/*   opts     Options, or NULL for defaults. Copied.                        */
/*   req      Out: the request handle. May be NULL (fire-and-forget): the   */
/*            operation then runs to completion on its own and reports only */
/*            through the callback.                                         */
/* Buffers and counts mean what they mean for the blocking call of the same */
/* name in kungfu.h. The return value is about the submission only          */
/* (KF_ERR_INVALID_ARGUMENT for bad arguments or names; on a broken        */
/* communicator the cause, KF_ERR_REMOTE or KF_ERR_TIMEOUT, if no call has  */
/* reported it yet, else KF_ERR_ABORTED); on success the outcome of the     */
/* operation comes from the request. Thread safe.                           */
/* ------------------------------------------------------------------------ */

/** Asynchronous kf_all_reduce(). */
KF_API kf_status_t kf_iall_reduce(kf_comm_t comm, const char* name, const void* sendbuf,
                                  void* recvbuf, uint64_t count, kf_dtype_t dtype, kf_op_t op,
                                  const kf_op_options_t* opts, kf_request_t* req);

/** Asynchronous kf_broadcast(). */
KF_API kf_status_t kf_ibroadcast(kf_comm_t comm, const char* name, const void* sendbuf,
                                 void* recvbuf, uint64_t count, kf_dtype_t dtype, int root,
                                 const kf_op_options_t* opts, kf_request_t* req);

/** Asynchronous kf_reduce(). */
KF_API kf_status_t kf_ireduce(kf_comm_t comm, const char* name, const void* sendbuf,
                              void* recvbuf, uint64_t count, kf_dtype_t dtype, kf_op_t op,
                              int root, const kf_op_options_t* opts, kf_request_t* req);

/** Asynchronous kf_all_gather(). Partitions slice every rank's block alike. */
KF_API kf_status_t kf_iall_gather(kf_comm_t comm, const char* name, const void* sendbuf,
                                  void* recvbuf, uint64_t sendcount, kf_dtype_t dtype,
                                  const kf_op_options_t* opts, kf_request_t* req);

/** Asynchronous kf_reduce_scatter(). */
KF_API kf_status_t kf_ireduce_scatter(kf_comm_t comm, const char* name, const void* sendbuf,
                                      void* recvbuf, uint64_t recvcount, kf_dtype_t dtype,
                                      kf_op_t op, const kf_op_options_t* opts, kf_request_t* req);

/** Asynchronous kf_all_to_all(). In place (sendbuf == recvbuf) is allowed. */
KF_API kf_status_t kf_iall_to_all(kf_comm_t comm, const char* name, const void* sendbuf,
                                  void* recvbuf, uint64_t count, kf_dtype_t dtype,
                                  const kf_op_options_t* opts, kf_request_t* req);

/** Asynchronous kf_gather(). */
KF_API kf_status_t kf_igather(kf_comm_t comm, const char* name, const void* sendbuf,
                              void* recvbuf, uint64_t sendcount, kf_dtype_t dtype, int root,
                              const kf_op_options_t* opts, kf_request_t* req);

/** Asynchronous kf_scatter(). */
KF_API kf_status_t kf_iscatter(kf_comm_t comm, const char* name, const void* sendbuf,
                               void* recvbuf, uint64_t recvcount, kf_dtype_t dtype, int root,
                               const kf_op_options_t* opts, kf_request_t* req);

/** Asynchronous kf_barrier(): completes once every rank submitted `name`. */
KF_API kf_status_t kf_ibarrier(kf_comm_t comm, const char* name, const kf_op_options_t* opts,
                               kf_request_t* req);

/* ------------------------------------------------------------------------ */
/* Completion                                                               */
/* ------------------------------------------------------------------------ */

/**
 * Checks whether the operation is complete, without waiting for it. So that a
 * thread that polls makes progress, the call may first run, on the calling
 * thread, one ready partition: of an operation that every rank has submitted
 * (so it waits only for peers already on their way, about the time of one
 * partition), with the completion callbacks of what that completes. It never
 * waits for a submission that has not happened.
 * @param req  A request from a kf_i* call, not freed.
 * @return KF_IN_PROGRESS while the operation runs; then its final status
 *         (KF_SUCCESS, or the error; the detail is in kf_request_error()).
 *         KF_ERR_INVALID_ARGUMENT for a NULL or unknown handle.
 */
KF_API kf_status_t kf_request_test(kf_request_t req);

/**
 * Waits until the operation completes and returns its final status. The
 * waiting thread lends itself to the engine meanwhile: it may run the
 * operation's partitions itself (no thread hand-off for small operations),
 * start what the credit admits, and run partitions of other operations that
 * every rank has submitted, never one that still waits for a peer's
 * submission: so it returns once `req` is done and the partition it is
 * running (if any) ends, whatever the other requests wait for. Bounded by
 * the operation timeout.
 * A failure is also recorded as the communicator's last error if the
 * communicator still exists.
 * @return The final status; KF_ERR_INVALID_USAGE at once when called inside
 *         a completion callback while `req` is still in progress.
 */
KF_API kf_status_t kf_request_wait(kf_request_t req);

/**
 * Waits until at least one of `n` requests completes. The requests may
 * belong to different communicators. Meanwhile the calling thread runs
 * partitions of their operations (as kf_request_wait does); with nothing
 * to run it sleeps until a request of the process completes, looking again
 * at least every millisecond.
 * @param n      Number of requests, >= 1.
 * @param reqs   Array of n requests; NULL entries are skipped (at least one
 *               must be non-NULL).
 * @param index  Out: position of a completed request in reqs.
 * @return The final status of reqs[*index]; KF_ERR_INVALID_USAGE at once
 *         (*index unset) when called inside a completion callback while
 *         none of the requests is complete.
 */
KF_API kf_status_t kf_request_wait_any(size_t n, const kf_request_t* reqs, size_t* index);

/**
 * Waits until all `n` requests complete (NULL entries are skipped). The
 * thread lends itself as kf_request_wait does: it waits for the last
 * request first (listed in submission order, at equal priority it usually
 * completes last, so the thread is not woken at each earlier completion),
 * and runs the partitions of the others that come its way rather than
 * hand them to another thread.
 * @return KF_SUCCESS if every one succeeded, else the status of the first
 *         failed request in array order; KF_ERR_INVALID_USAGE at once when
 *         called inside a completion callback while one is in progress.
 */
KF_API kf_status_t kf_request_wait_all(size_t n, const kf_request_t* reqs);

/**
 * The error text of a completed request: a sentence naming the operation,
 * or "" when it succeeded or is still running. Valid until the request is
 * freed.
 */
KF_API const char* kf_request_error(kf_request_t req);

/**
 * Releases a completed request. NULL is a no-op.
 * @return KF_ERR_INVALID_USAGE (and nothing is freed) while the operation is
 *         still running; KF_ERR_INVALID_ARGUMENT for an unknown handle.
 */
KF_API kf_status_t kf_request_free(kf_request_t req);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KUNGFU_ASYNC_H */
