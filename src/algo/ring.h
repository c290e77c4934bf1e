// The two halves of every ring algorithm, shared by all_reduce, reduce,
// reduce_scatter and all_gather. Private to src/algo.
//
// Ring order: rank r sends to r+1 and receives from r-1. The buffer is cut
// into one segment per rank (see Layout); every segment is cut into the same
// number of chunks, and chunks are the unit of pipelining: a chunk is
// forwarded as soon as it has arrived (and been reduced), so the ring's
// steps overlap instead of running one after the other.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "algo/common.h"
#include "algo/peers.h"
#include "kungfu/types.h"

namespace kf {

struct RingReduceScatterArgs {
  const Layout* layout = nullptr;
  kf_dtype_t dtype = KF_FLOAT32;
  kf_op_t op = KF_SUM;
  // This rank's contribution, indexed by layout element offsets.
  const void* local = nullptr;
  // Partial results of the segments that pass through this rank, same
  // indexing. May equal `local` (in place). Must not be read by anyone else
  // until the call returns.
  void* acc = nullptr;
  // Where the fully reduced segment `rank` goes, indexed from the start of
  // that segment. May alias `local`'s copy of that segment.
  void* own_out = nullptr;
  // Called once per chunk of the owned segment as soon as it is final, with
  // the chunk index, its range (whole-buffer offsets) and a pointer to its
  // result. Lets the caller finish KF_AVG and start the next phase early.
  std::function<void(size_t chunk, Range range, void* result)> on_final;
};

// Reduce-scatter over the ring: afterwards rank r holds segment r reduced
// over all ranks (op, with KF_AVG still a plain sum) in own_out. Uses tag
// steps 0 .. size-2. Waits for all of its own sends before returning.
Status ring_reduce_scatter_core(Peers& p, const RingReduceScatterArgs& a);

// All-gather over the ring: on entry segment r of `buf` holds this rank's
// block; afterwards every segment holds its owner's block. Uses tag steps
// step_base .. step_base+size-2. When own_sent is true the caller has
// already posted the sends of step 0 (its own segment) with those tags.
Status ring_all_gather_core(Peers& p, const Layout& layout, size_t esize, void* buf, int step_base,
                            bool own_sent);

}  // namespace kf
