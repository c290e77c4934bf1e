/*
 * libkungfu: adaptive collective communication for distributed training.
 *
 * This umbrella header is the whole public C API (C99, usable from C++).
 *
 * Naming grammar: kf_<object>_<verb> (kf_comm_init, kf_comm_destroy); the
 * collectives are kf_<collective> and take the communicator first; types end
 * in _t; out-parameters come last. Internal C-visible symbols use the kfi_
 * prefix and are never exported.
 *
 * Errors: every function returns a kf_status_t. When a call on a communicator
 * fails, kf_comm_last_error() returns a sentence with the detail. No function
 * calls exit() or abort() on bad input or on a peer failure.
 *
 * Threads: every function is thread safe. Blocking collectives on one
 * communicator run one at a time (calls from several threads are serialised)
 * and must be called in the same order on every rank, as in MPI; a rank that
 * calls a different collective, or the same one with other arguments, makes
 * the call fail with KF_ERR_INVALID_USAGE or KF_ERR_TIMEOUT on the ranks
 * involved. kf_comm_destroy() must not race with other calls on the same
 * communicator.
 *
 * Data paths: ranks on the same host (same hostname and boot id) exchange
 * data through shared memory; ranks on different hosts through TCP. Set
 * KF_TRANSPORT=tcp to force TCP everywhere (for testing). Across hosts,
 * all_reduce, broadcast and all_gather of 32 KiB and more run hierarchically
 * (within hosts, then across, then within): see kungfu/strategy.h.
 *
 * Failures: if a peer dies or closes its communicator mid-operation, the
 * operation fails on the survivors with KF_ERR_REMOTE naming the lost rank
 * (or KF_ERR_TIMEOUT after the configured timeout if the peer hangs), and
 * every later call on the communicator fails with KF_ERR_ABORTED: destroy it
 * and create a new one. A survivor that learns of the loss between two of
 * its calls (another survivor told it) gets KF_ERR_REMOTE from its next call,
 * so the cause always reaches the application once before KF_ERR_ABORTED.
 *
 * Counts are numbers of elements (not bytes) and are 64-bit.
 */
#ifndef KUNGFU_KUNGFU_H
#define KUNGFU_KUNGFU_H

#include "kungfu/types.h"
#include "kungfu/version.h"
#include "kungfu/topology.h"
#include "kungfu/split.h"
#include "kungfu/sparse.h"
#include "kungfu/strategy.h"
#include "kungfu/async.h"
#include "kungfu/tune.h"
#include "kungfu/sparse_allreduce.h"
#include "kungfu/pto.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Library information                                                      */
/* ------------------------------------------------------------------------ */

/**
 * Returns the version of the library linked at run time, encoded as
 * KF_VERSION_ENCODE(major, minor, patch). Compare with KF_VERSION_CODE.
 */
KF_API int kf_get_version(void);

/**
 * Returns a static, human-readable name for a status code, e.g.
 * "KF_ERR_TIMEOUT: operation timed out". Never returns NULL; unknown values
 * give "unknown status".
 */
KF_API const char* kf_status_string(kf_status_t status);

/**
 * Returns the size in bytes of one element of `dtype`, or 0 if `dtype` is not
 * a valid kf_dtype_t.
 */
KF_API size_t kf_dtype_size(kf_dtype_t dtype);

/* ------------------------------------------------------------------------ */
/* Communicator life cycle                                                  */
/* ------------------------------------------------------------------------ */

/**
 * Creates a new unique id for a job: opens the rendezvous point on this host
 * address (chosen by KF_IFNAME / KF_SUBNET if set, else the first non-loopback
 * interface, else loopback) and draws a random job secret.
 *
 * The rank that calls this must then call kf_comm_init() with rank 0.
 *
 * @param[out] id  Receives the id. Must not be NULL.
 * @return KF_SUCCESS, KF_ERR_INVALID_ARGUMENT (NULL id), KF_ERR_SYSTEM.
 */
KF_API kf_status_t kf_get_unique_id(kf_unique_id_t* id);

/**
 * Creates a communicator of `size` ranks, collectively: every rank calls it
 * with the same id and size and its own rank. Returns when all ranks are
 * connected, or with KF_ERR_TIMEOUT after the configured timeout.
 *
 * @param[in]  id      Unique id from kf_get_unique_id() on rank 0. Not NULL.
 * @param[in]  size    Number of ranks, 1 .. 65536.
 * @param[in]  rank    This process's rank, 0 .. size-1.
 * @param[in]  config  Options, or NULL for defaults. See kf_config_t.
 * @param[out] comm    Receives the communicator. Not NULL. Set to NULL on failure.
 * @return KF_SUCCESS, KF_ERR_INVALID_ARGUMENT, KF_ERR_SYSTEM, KF_ERR_REMOTE,
 *         KF_ERR_TIMEOUT.
 */
KF_API kf_status_t kf_comm_init(const kf_unique_id_t* id, int size, int rank,
                                const kf_config_t* config, kf_comm_t* comm);

/**
 * Creates a communicator from the environment of a launcher: kfrun
 * (KF_RANK, KF_SIZE, KF_ROOT_ADDR, KF_JOB_SECRET), OpenMPI's mpirun
 * (OMPI_COMM_WORLD_RANK/SIZE) or Slurm's srun (SLURM_PROCID/NTASKS). Under
 * mpirun and srun the rendezvous address is KF_ROOT_ADDR if set, else
 * 127.0.0.1 when all ranks share one host, with a port derived from the job id.
 * Without any launcher the communicator has one rank.
 *
 * @param[in]  config  Options, or NULL for defaults.
 * @param[out] comm    Receives the communicator. Not NULL.
 * @return as kf_comm_init().
 */
KF_API kf_status_t kf_comm_init_from_env(const kf_config_t* config, kf_comm_t* comm);

/**
 * Destroys a communicator: waits (up to the timeout) until data this rank has
 * sent is handed to the network, closes connections and frees all resources.
 * Destroying NULL is a no-op returning KF_SUCCESS. Destroying the same handle
 * twice is undefined behaviour (it is detected and reported as
 * KF_ERR_INVALID_USAGE when the memory was not reused). Inside a completion
 * callback (kungfu/async.h) it returns KF_ERR_INVALID_USAGE and destroys
 * nothing: the thread running the callback may be one that destroying must
 * wait for.
 * Peers learn of it: over TCP, their operations still waiting for data this
 * rank never sent fail at once with KF_ERR_REMOTE ("rank N closed its
 * communicator"); data it sent before is still delivered.
 *
 * @param[in] comm  Communicator to destroy.
 */
KF_API kf_status_t kf_comm_destroy(kf_comm_t comm);

/**
 * Gets this process's rank in `comm`.
 * @param[in]  comm  Communicator. Not NULL.
 * @param[out] rank  Receives the rank. Not NULL.
 */
KF_API kf_status_t kf_comm_rank(kf_comm_t comm, int* rank);

/**
 * Gets the number of ranks in `comm`.
 * @param[in]  comm  Communicator. Not NULL.
 * @param[out] size  Receives the size. Not NULL.
 */
KF_API kf_status_t kf_comm_size(kf_comm_t comm, int* size);

/**
 * Returns the detail of the last failure of a call on `comm` made by any
 * thread, or "" if none failed. With comm == NULL, returns the detail of the
 * last failure that had no communicator (e.g. kf_comm_init). The text stays
 * valid until the next failing call on the same communicator from the calling
 * thread or until the communicator is destroyed.
 */
KF_API const char* kf_comm_last_error(kf_comm_t comm);

/* ------------------------------------------------------------------------ */
/* Blocking collectives                                                     */
/*                                                                          */
/* All ranks must call the same collective with the same count, dtype, op   */
/* and root. sendbuf == recvbuf (or the documented in-place position) runs  */
/* in place. Buffers belong to the caller and are not touched after return. */
/* A count of 0 is valid (buffers may be NULL) and moves no data, but it is */
/* still a collective: every rank must call it and it waits for the others */
/* like a barrier; a peer's nonzero count is an error on every rank.        */
/* Common errors: KF_ERR_INVALID_ARGUMENT for NULL buffers with count > 0,  */
/* a bad dtype, op or root, or a byte size that overflows; KF_ERR_REMOTE    */
/* when a peer died; KF_ERR_TIMEOUT; KF_ERR_ABORTED after an earlier peer   */
/* failure broke the communicator.                                          */
/* ------------------------------------------------------------------------ */

/**
 * Reduces `count` elements across all ranks; every rank receives the result.
 * @param[in]  comm     Communicator.
 * @param[in]  sendbuf  count elements to contribute.
 * @param[out] recvbuf  count elements of result; may equal sendbuf (in place).
 */
KF_API kf_status_t kf_all_reduce(kf_comm_t comm, const void* sendbuf, void* recvbuf,
                                 uint64_t count, kf_dtype_t dtype, kf_op_t op);

/**
 * Copies `count` elements from `root` to every rank.
 * @param[in]  sendbuf  Data on root; ignored elsewhere (may be NULL).
 * @param[out] recvbuf  Receives the data on every rank; on root it may equal
 *                      sendbuf (in place).
 */
KF_API kf_status_t kf_broadcast(kf_comm_t comm, const void* sendbuf, void* recvbuf,
                                uint64_t count, kf_dtype_t dtype, int root);

/**
 * Reduces `count` elements across all ranks into `recvbuf` on `root`.
 * @param[in]  sendbuf  count elements to contribute, on every rank.
 * @param[out] recvbuf  count elements of result on root (may equal sendbuf);
 *                      ignored on other ranks (may be NULL).
 */
KF_API kf_status_t kf_reduce(kf_comm_t comm, const void* sendbuf, void* recvbuf,
                             uint64_t count, kf_dtype_t dtype, kf_op_t op, int root);

/**
 * Gathers `sendcount` elements from every rank into every rank's `recvbuf`,
 * ordered by rank.
 * @param[in]  sendbuf    sendcount elements. In place when sendbuf equals
 *                        recvbuf + rank * sendcount elements.
 * @param[out] recvbuf    size * sendcount elements.
 */
KF_API kf_status_t kf_all_gather(kf_comm_t comm, const void* sendbuf, void* recvbuf,
                                 uint64_t sendcount, kf_dtype_t dtype);

/**
 * Reduces size * recvcount elements across ranks; rank r receives block r.
 * @param[in]  sendbuf    size * recvcount elements.
 * @param[out] recvbuf    recvcount elements. In place when recvbuf equals
 *                        sendbuf + rank * recvcount elements.
 */
KF_API kf_status_t kf_reduce_scatter(kf_comm_t comm, const void* sendbuf, void* recvbuf,
                                     uint64_t recvcount, kf_dtype_t dtype, kf_op_t op);

/**
 * Every rank sends block j (count elements) of sendbuf to rank j, and
 * receives rank j's block into block j of recvbuf.
 * @param[in]  sendbuf  size * count elements.
 * @param[out] recvbuf  size * count elements; may equal sendbuf (in place).
 */
KF_API kf_status_t kf_all_to_all(kf_comm_t comm, const void* sendbuf, void* recvbuf,
                                 uint64_t count, kf_dtype_t dtype);

/**
 * Gathers `sendcount` elements from every rank into `recvbuf` on `root`.
 * @param[in]  sendbuf  sendcount elements. On root, in place when sendbuf
 *                      equals recvbuf + root * sendcount elements.
 * @param[out] recvbuf  size * sendcount elements on root; ignored elsewhere.
 */
KF_API kf_status_t kf_gather(kf_comm_t comm, const void* sendbuf, void* recvbuf,
                             uint64_t sendcount, kf_dtype_t dtype, int root);

/**
 * Scatters block r (recvcount elements) of root's `sendbuf` to rank r.
 * @param[in]  sendbuf  size * recvcount elements on root; ignored elsewhere.
 * @param[out] recvbuf  recvcount elements. On root, in place when recvbuf
 *                      equals sendbuf + root * recvcount elements.
 */
KF_API kf_status_t kf_scatter(kf_comm_t comm, const void* sendbuf, void* recvbuf,
                              uint64_t recvcount, kf_dtype_t dtype, int root);

/** Returns once every rank of `comm` has entered the barrier. */
KF_API kf_status_t kf_barrier(kf_comm_t comm);

/**
 * Sends `count` elements to rank `peer`. Returns when `buf` may be reused.
 * Sends and receives between one pair of ranks match in call order.
 * @param[in] peer  Destination rank, not this rank.
 */
KF_API kf_status_t kf_send(kf_comm_t comm, const void* buf, uint64_t count,
                           kf_dtype_t dtype, int peer);

/**
 * Receives `count` elements from rank `peer` into `buf`. The sender's count
 * must be the same (a different size is KF_ERR_INVALID_USAGE).
 * @param[in] peer  Source rank, not this rank.
 */
KF_API kf_status_t kf_recv(kf_comm_t comm, void* buf, uint64_t count,
                           kf_dtype_t dtype, int peer);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KUNGFU_KUNGFU_H */
