/*
 * libkungfu parallel tensor operation (PTO): reduce-scatter, a user step on
 * this rank's shard, all-gather, as one blocking call, in place.
 *
 * The typical use is a sharded optimizer update: the gradient is summed (or
 * averaged) over ranks, each rank applies the update to its 1/size of the
 * parameters only, and the updated shards are shared, so every rank ends
 * with the whole updated tensor while doing 1/size of the update work and
 * moving the same bytes as one all_reduce.
 *
 * Example (SGD on a parameter vector w with gradient g, both n floats):
 *
 *     struct step { float* w; float lr; };
 *     static int update(void* shard, uint64_t count, uint64_t offset, void* u) {
 *         struct step* s = u; const float* g = shard;
 *         for (uint64_t i = 0; i < count; ++i) s->w[offset + i] -= s->lr * g[i];
 *         memcpy(shard, s->w + offset, count * sizeof(float));  // shard now holds w
 *         return 0;
 *     }
 *     struct step s = { w, 0.1f };
 *     kf_pto(comm, g, n, KF_FLOAT32, KF_AVG, update, &s);   // g now holds the new w
 *
 * C99; compiles on its own as C and as C++.
 */
#ifndef KUNGFU_PTO_H
#define KUNGFU_PTO_H

#include <stddef.h>
#include <stdint.h>

#include "kungfu/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * The user step of kf_pto, called once per call on every rank, on the
 * calling thread, between the reduce-scatter and the all-gather.
 *
 * @param[in,out] shard      This rank's shard of the buffer, reduced over all
 *                           ranks; whatever the callback leaves there is
 *                           what the other ranks receive. Valid only during
 *                           the call.
 * @param[in]     count      Elements in the shard: count/size, the first
 *                           count%size ranks one more; may be 0.
 * @param[in]     offset     Index of the shard's first element in the buffer.
 * @param[in]     user_data  The pointer given to kf_pto.
 * @return 0 on success; any other value fails the kf_pto call on every rank.
 *         Must not call libkungfu functions on the same communicator.
 */
typedef int (*kf_pto_fn)(void* shard, uint64_t count, uint64_t offset, void* user_data);

/**
 * Parallel tensor operation, in place and blocking (collective: every rank
 * calls it with the same count, dtype and op).
 *
 * @param[in]     comm       Communicator.
 * @param[in,out] buf        count elements: this rank's contribution on
 *                           entry; on success, every rank's shard after its
 *                           callback, concatenated (the same on every rank).
 * @param[in]     count      Number of elements (any count, uneven allowed).
 * @param[in]     dtype      Element type.
 * @param[in]     op         Reduction of the reduce-scatter (KF_AVG divides
 *                           before the callback sees the shard).
 * @param[in]     fn         The step on this rank's shard. Not NULL.
 * @param[in]     user_data  Passed to fn unchanged; may be NULL.
 * @return KF_SUCCESS; KF_ERR_INVALID_ARGUMENT for a NULL comm, buf or fn, or
 *         a bad dtype or op; KF_ERR_INVALID_USAGE when the callback returned
 *         non-zero on some rank (the text names the rank and value; every
 *         rank returns it, buf then holds partial results and the
 *         communicator stays usable); KF_ERR_REMOTE, KF_ERR_TIMEOUT,
 *         KF_ERR_ABORTED as for the collectives.
 */
KF_API kf_status_t kf_pto(kf_comm_t comm, void* buf, uint64_t count, kf_dtype_t dtype, kf_op_t op,
                          kf_pto_fn fn, void* user_data);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KUNGFU_PTO_H */
