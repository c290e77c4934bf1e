/*
 * libkungfu sparse tensors: top-k selection by magnitude for gradient
 * sparsification.
 *
 * kf_topk() picks k of the d elements of x by |x| and returns them as
 * (value, index) pairs, with either of two algorithms:
 *
 *  - KF_TOPK_MSTOPK: MSTopK (Shi et al., "Towards Scalable Distributed
 *    Training of Deep Learning on Public Cloud Clusters", MLSys 2021). A
 *    threshold on |x| is bisected between mean(|x|) and max(|x|) for a number
 *    of rounds with count-only passes (vectorised and multithreaded); every
 *    element at or above the upper bound found is kept, and the remaining
 *    slots are filled with a run of consecutive elements (in index order) of
 *    the band just below it, starting at a seeded random position. The result
 *    is approximate (elements of the band are interchangeable) but always
 *    exactly k pairs, and deterministic for a given seed whatever the number
 *    of threads.
 *  - KF_TOPK_EXACT: the exact top k (std::nth_element on the magnitudes, a
 *    linear-time selection, then one pass; single-threaded). Of elements tied
 *    at the k-th magnitude, the lowest indices are taken.
 *
 * Example (1% density):
 *
 *     uint64_t k = d / 100;
 *     float* values = malloc(k * sizeof(float));
 *     uint32_t* indices = malloc(k * sizeof(uint32_t));
 *     kf_topk_options_t opts = KF_TOPK_OPTIONS_INITIALIZER;
 *     opts.seed = step;  // a new window every step
 *     if (kf_topk(grad, d, k, KF_TOPK_MSTOPK, &opts, values, indices) != KF_SUCCESS)
 *         fprintf(stderr, "%s\n", kf_comm_last_error(NULL));
 *
 * No communicator is involved: on failure, kf_comm_last_error(NULL) returns
 * the detail (per thread). Thread safe: calls share no state.
 * C99; compiles on its own as C and as C++.
 */
#ifndef KUNGFU_SPARSE_H
#define KUNGFU_SPARSE_H

#include <stddef.h>
#include <stdint.h>

#include "kungfu/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Top-k algorithms. Values are part of the ABI. */
typedef enum kf_topk_algo {
    KF_TOPK_MSTOPK = 0, /**< Approximate: threshold bisection + band fill (fast). */
    KF_TOPK_EXACT = 1   /**< Exact: selection by std::nth_element (the reference). */
} kf_topk_algo_t;

/** Magic number that marks an initialised kf_topk_options_t. */
#define KF_TOPK_OPTIONS_MAGIC 0x6b66746bu /* "kftk" */

/**
 * Options of kf_topk(). Initialise with KF_TOPK_OPTIONS_INITIALIZER and then
 * set the fields you need: the library reads only the fields the caller's
 * `size` covers, so programs built against older headers keep working.
 * KF_TOPK_EXACT ignores every option.
 */
typedef struct kf_topk_options {
    size_t size;     /**< sizeof(kf_topk_options_t), set by the initializer. */
    uint32_t magic;  /**< KF_TOPK_OPTIONS_MAGIC, set by the initializer. */
    int32_t rounds;  /**< MSTopK bisection rounds, 0 .. 1000 (default 20). Each is one
                          count-only pass; beyond about 32 rounds the bracket is exact and
                          the search stops early. */
    uint64_t seed;   /**< Seeds the start of the band window (default 0). Same seed and
                          input, same output. */
    int32_t threads; /**< Threads for the passes over x: 0 = automatic (default; one for
                          small x), else 1 .. 1024. The output does not depend on it. */
} kf_topk_options_t;

/** Initial value of a kf_topk_options_t: the defaults. */
#define KF_TOPK_OPTIONS_INITIALIZER \
    { sizeof(kf_topk_options_t), KF_TOPK_OPTIONS_MAGIC, 20, 0, 0 }

/**
 * Selects the k elements of largest magnitude of x (exactly, or approximately
 * with MSTopK) and writes them as pairs: values[j] == x[indices[j]] (the
 * signed value), with indices distinct and ascending. Exactly min(k, d) pairs
 * are written; k >= d returns every element. Nothing is written on error.
 *
 * @param[in]  x        d floats, all finite. May be NULL only when d == 0.
 *                      Not modified; must not overlap values or indices.
 * @param[in]  d        Number of elements, below 2^32 (indices are uint32).
 * @param[in]  k        Number of pairs wanted; 0 is valid and writes nothing.
 * @param[in]  algo     KF_TOPK_MSTOPK or KF_TOPK_EXACT.
 * @param[in]  options  MSTopK options, or NULL for the defaults. See
 *                      kf_topk_options_t.
 * @param[out] values   Receives min(k, d) values. May be NULL when min(k, d) == 0.
 * @param[out] indices  Receives min(k, d) indices. May be NULL when min(k, d) == 0.
 * @return KF_SUCCESS; KF_ERR_INVALID_ARGUMENT for a NULL pointer that is
 *         needed, d >= 2^32, an unknown algo, options not initialised with
 *         KF_TOPK_OPTIONS_INITIALIZER or out of range, or a NaN or Inf in x
 *         (the detail names its index); KF_ERR_SYSTEM when memory runs out.
 *         The detail is in kf_comm_last_error(NULL).
 */
KF_API kf_status_t kf_topk(const float* x, uint64_t d, uint64_t k, kf_topk_algo_t algo,
                           const kf_topk_options_t* options, float* values, uint32_t* indices);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KUNGFU_SPARSE_H */
