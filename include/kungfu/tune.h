/*
 * libkungfu scheduler parameters and online tuning.
 *
 * The asynchronous scheduler (kungfu/async.h) cuts operations into
 * partitions and bounds the bytes a rank starts at once by a credit window.
 * Both can be set here, or tuned online: with KF_AUTOTUNE=1 the library
 * searches the partition size and credit that give the shortest training
 * step, measured between calls of kf_comm_step(). Every rank takes the same
 * decisions: the step time fed to the tuner is the maximum over all ranks
 * (one 8-byte all-reduce per step), and the tuner is deterministic. It
 * re-tunes when the step time drifts by more than 15% for 3 steps.
 *
 * C99; compiles on its own as C and as C++.
 */
#ifndef KUNGFU_TUNE_H
#define KUNGFU_TUNE_H

#include <stdint.h>

#include "kungfu/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Marks the end of one training step. With KF_AUTOTUNE=1 this is a
 * collective (a tiny blocking all-reduce): every rank calls it once per
 * step, at the same point of its sequence of kf_i* submissions (e.g. after
 * submitting the step's last gradient, or before its first), so that a new
 * partition size applies to the same operations on every rank. The first
 * call starts the clock. With KF_AUTOTUNE unset or 0 it returns at once.
 * @param comm  Communicator.
 * @return KF_SUCCESS; KF_ERR_INVALID_ARGUMENT for a bad handle; with
 *         tuning on, the status of the agreement (e.g. KF_ERR_REMOTE when a
 *         peer is lost). Thread safe, but call it from one thread per step.
 */
KF_API kf_status_t kf_comm_step(kf_comm_t comm);

/**
 * The scheduler's current default partition size and credit window.
 * @param comm             Communicator.
 * @param partition_bytes  Out: partition size in bytes; may be NULL.
 * @param credit_bytes     Out: credit window in bytes; may be NULL.
 * @return KF_SUCCESS, or KF_ERR_INVALID_ARGUMENT for a bad handle.
 */
KF_API kf_status_t kf_comm_get_sched(kf_comm_t comm, uint64_t* partition_bytes,
                                     uint64_t* credit_bytes);

/**
 * Sets the scheduler's default partition size and credit window (0 = the
 * KF_PARTITION_BYTES / KF_CREDIT_BYTES default). The partition size applies
 * to operations submitted after the call; it is part of an operation's
 * signature, so every rank must make the same change at the same point of
 * its submission sequence (a difference fails those operations with
 * KF_ERR_INVALID_USAGE, it never hangs). The credit is this rank's alone
 * and applies at once. With KF_AUTOTUNE=1 the tuner's next decision
 * replaces these values.
 * @param comm             Communicator.
 * @param partition_bytes  Partition size in bytes, or 0.
 * @param credit_bytes     Credit window in bytes, or 0.
 * @return KF_SUCCESS, or KF_ERR_INVALID_ARGUMENT for a bad handle.
 */
KF_API kf_status_t kf_comm_set_sched(kf_comm_t comm, uint64_t partition_bytes,
                                     uint64_t credit_bytes);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KUNGFU_TUNE_H */
