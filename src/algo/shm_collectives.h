// Collectives over a SharedArena, for groups whose ranks all share a host.
//
// all_reduce, small messages (one shot): every rank copies its input into its
// staging buffer, one barrier, then every rank reduces all staging buffers
// in rank order into its output: identical bits everywhere, one barrier.
// Large messages (staged reduce-scatter + all-gather): the message is cut in
// rounds of one staging buffer, n pieces each. Each rank stages the pieces
// the others own; after a barrier, rank r reduces piece r (its own input read
// in place, the others' from their staging) into its output and publishes it
// in its staging; after a second barrier every rank copies the other pieces
// out. Rounds are cache sized, so staging traffic mostly stays in cache, and
// the two staging buffers alternate by round, so no third barrier is needed.
// Messages up to `one_shot_max_bytes` (and one staging buffer) go one shot.
#pragma once

#include <cstddef>

#include "algo/arena.h"
#include "kungfu/types.h"

namespace kf {

// `signature` is the operation's digest of (kind, count, dtype, op); ranks
// that disagree all fail with KF_ERR_INVALID_USAGE after the first barrier.
Status arena_all_reduce(SharedArena& a, uint32_t signature, const void* send, void* recv,
                        size_t count, kf_dtype_t dtype, kf_op_t op, size_t one_shot_max_bytes);

}  // namespace kf
