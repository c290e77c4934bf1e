// Collectives over a SharedArena, for groups whose ranks all share a host.
//
// all_reduce, small messages (one shot): every rank copies its input into its
// staging buffer, one barrier, then every rank reduces all staging buffers
// in rank order into its output: identical bits everywhere, one barrier.
// Large messages (staged reduce-scatter + all-gather): the message is cut in
// rounds of one staging buffer, n shares each. Each rank stages the shares
// the others own; after a barrier, rank r reduces share r (its own input read
// in place, the others' from their staging) into its output and publishes it
// in its staging; every rank copies the other shares of a round out after
// the next round's barrier, so rounds are pipelined: one barrier per round
// plus one. Rounds are cache sized, so staging traffic mostly stays in
// cache; every share has a fixed slot of the staging buffer, and two
// buffers alternating by round suffice (see shm_collectives.cc).
// Messages up to `one_shot_max_bytes` (rounded up to 64; at most one staging
// buffer) go one shot.
// Single-copy mode (SharedArena::single_copy) applies to one operation only.
#pragma once

#include <cstddef>

#include "algo/arena.h"
#include "kungfu/types.h"

namespace kf {

// Reduces `count` elements of `dtype` with `op` from every rank's `send`
// into every rank's `recv` (send == recv: in place; count 0 may pass NULL).
// `signature` is the operation's digest of (kind, count, dtype, op); ranks
// that disagree all fail with KF_ERR_INVALID_USAGE after the first barrier.
// `one_shot_max_bytes`: see arena_all_reduce_pieces().
Status arena_all_reduce(SharedArena& a, uint32_t signature, const void* send, void* recv,
                        size_t count, kf_dtype_t dtype, kf_op_t op, size_t one_shot_max_bytes);

// Several all_reduces of one dtype and op in one pass, so that they share its
// barriers: operation i reduces pieces[i].count elements from pieces[i].send
// into pieces[i].recv. send may equal recv (in place); otherwise no two
// buffers of a pass may overlap.
struct ArenaPiece {
  const void* send;
  void* recv;
  size_t count;
};
// `pieces`: the `npieces` operations, in an order equal on every rank.
// Runs one shot when their inputs, each rounded up to 64 bytes, add up to at
// most `one_shot_max_bytes` (rounded up to 64) and one staging buffer; else
// staged as above over the pieces laid end to end (a round and a rank's
// share may span operations; single copy only for one piece). `signature`:
// the digest of the whole pass, equal on every rank (checked as above);
// `one_shot_max_bytes` must be equal on every rank too (the communicator
// agrees it at init).
// arena_all_reduce() is this with one piece.
Status arena_all_reduce_pieces(SharedArena& a, uint32_t signature, const ArenaPiece* pieces,
                               size_t npieces, kf_dtype_t dtype, kf_op_t op,
                               size_t one_shot_max_bytes);

}  // namespace kf
