/*
 * libkungfu basic types: status codes, data types, reduction operators,
 * handles, the unique id and the communicator configuration.
 *
 * C99; compiles on its own as C and as C++.
 */
#ifndef KUNGFU_TYPES_H
#define KUNGFU_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "kungfu/version.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Marks a function exported from libkungfu. */
#if defined(_WIN32)
#define KF_API
#else
#define KF_API __attribute__((visibility("default")))
#endif

/**
 * Result of every libkungfu call. Values are part of the ABI and never change.
 * Details of a failure are in kf_comm_last_error() of the communicator involved.
 */
typedef enum kf_status {
    KF_SUCCESS = 0,                 /**< The call succeeded. */
    KF_IN_PROGRESS = 1,             /**< An asynchronous operation has not finished yet. */
    KF_ERR_INVALID_ARGUMENT = 2,    /**< A parameter is wrong (null pointer, bad dtype, bad rank...). */
    KF_ERR_INVALID_USAGE = 3,       /**< Arguments are valid but the call is not (e.g. ranks disagree). */
    KF_ERR_SYSTEM = 4,              /**< An operating-system call failed (socket, memory, thread). */
    KF_ERR_REMOTE = 5,              /**< A peer failed or closed its connection. */
    KF_ERR_TIMEOUT = 6,             /**< The operation did not finish within the configured timeout. */
    KF_ERR_ABORTED = 7,             /**< The communicator was aborted; no further operation can run. */
    KF_ERR_INTERNAL = 8,            /**< A bug in libkungfu; please report it. */
    KF_ERR_NOT_SUPPORTED = 9        /**< The feature is not compiled in or not available here. */
} kf_status_t;

/** Element types. Values are part of the ABI. */
typedef enum kf_dtype {
    KF_INT8 = 0,
    KF_UINT8 = 1,
    KF_INT32 = 2,
    KF_UINT32 = 3,
    KF_INT64 = 4,
    KF_UINT64 = 5,
    KF_FLOAT16 = 6,   /**< IEEE 754 binary16; reductions accumulate in float32. */
    KF_BFLOAT16 = 7,  /**< bfloat16; reductions accumulate in float32. */
    KF_FLOAT32 = 8,
    KF_FLOAT64 = 9,
    KF_DTYPE_COUNT = 10 /**< Number of dtypes; not a dtype. */
} kf_dtype_t;

/**
 * Reduction operators. Every operator is defined for every dtype.
 * Integer sum and prod wrap around (two's complement). KF_AVG is the sum
 * divided by the number of ranks; for integers the division truncates
 * toward zero.
 */
typedef enum kf_op {
    KF_SUM = 0,
    KF_PROD = 1,
    KF_MIN = 2,
    KF_MAX = 3,
    KF_AVG = 4,
    KF_OP_COUNT = 5 /**< Number of operators; not an operator. */
} kf_op_t;

/** Opaque communicator handle. */
typedef struct kf_comm* kf_comm_t;

/** Size in bytes of a unique id. */
#define KF_UNIQUE_ID_BYTES 128

/**
 * Identifies one job: the address of its rendezvous point and its secret.
 * One rank creates it with kf_get_unique_id() and sends it to the others out
 * of band (a file, MPI_Bcast, a job scheduler). Treat it as a secret: whoever
 * holds it may join the job.
 */
typedef struct kf_unique_id {
    char internal[KF_UNIQUE_ID_BYTES];
} kf_unique_id_t;

/** Magic number that marks an initialised kf_config_t. */
#define KF_CONFIG_MAGIC 0x6b66636fu /* "kfco" */

/**
 * Communicator options. Always initialise with KF_CONFIG_INITIALIZER and then
 * set the fields you need: the library reads only the fields the caller's
 * `size` covers, so programs built against older headers keep working.
 * A field left at its "unset" value takes the value of the matching KF_*
 * environment knob (see `kfinfo`), or the built-in default.
 */
typedef struct kf_config {
    size_t size;          /**< sizeof(kf_config_t), set by the initializer. */
    uint32_t magic;       /**< KF_CONFIG_MAGIC, set by the initializer. */
    uint32_t version;     /**< KF_VERSION_CODE of the headers, set by the initializer. */
    int64_t timeout_ms;   /**< Operation timeout in milliseconds; -1 = unset (KF_TIMEOUT_MS). */
    int32_t blocking;     /**< Reserved for non-blocking init; -1 = unset. */
    const char* name;     /**< Communicator name used in logs; NULL = "world". Copied. */
} kf_config_t;

/** Initial value of a kf_config_t: every option unset. */
#define KF_CONFIG_INITIALIZER \
    { sizeof(kf_config_t), KF_CONFIG_MAGIC, (uint32_t)KF_VERSION_CODE, -1, -1, NULL }

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KUNGFU_TYPES_H */
