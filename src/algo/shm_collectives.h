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

// Fused all_reduce: several small operations of one dtype and op in one pass,
// one shot (every rank stages each input at a 64-byte aligned offset of its
// staging buffer, one barrier, every rank reduces each into its output), so
// they share one barrier instead of paying one each.
struct ArenaPiece {
  const void* send;  // count elements (may equal recv)
  void* recv;
  size_t count;
};
// Staging bytes one operation of `bytes` takes in a fused pass.
inline size_t arena_fused_footprint(size_t bytes) {
  return (bytes + 63) / 64 * 64;
}
// `pieces`: `n` operations whose footprints add up to at most one staging
// buffer (else KF_ERR_INVALID_USAGE, before any barrier). `signature`: the
// digest of the whole pass, equal on every rank (checked as above).
Status arena_all_reduce_fused(SharedArena& a, uint32_t signature, const ArenaPiece* pieces,
                              size_t n, kf_dtype_t dtype, kf_op_t op);

}  // namespace kf
