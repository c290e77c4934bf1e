// RingTask: an in-place ring all_reduce cut into start() and finish(), so a
// composite algorithm can put the first messages of one ring on the wire and
// do other work (the intra-host phases of the next slice) before it waits.
// Transports move posted messages in the background (TCP has its progress
// thread), so the link stays busy meanwhile.
//
// Same ring as ring.h with one message per segment and step: reduce-scatter
// steps 0 .. n-2, all-gather steps n-1 .. 2n-3. start() posts every receive
// of both halves at once (reduce-scatter ones into scratch, all-gather ones
// straight into the buffer) and the first sends. Receiving an all-gather
// segment in place early is safe: it can only arrive after its owner
// finished the segment, which needs this rank's contribution to it, so this
// rank has already reduced and sent everything it held of that segment.
#pragma once

#include <cstddef>
#include <vector>

#include "algo/common.h"
#include "algo/peers.h"
#include "kungfu/types.h"

namespace kf {

class RingTask {
 public:
  // All ranks of `p` must run a RingTask with the same count, dtype and op.
  // KF_AVG is summed only: the caller divides. `buf` must stay valid until
  // finish() returns.
  RingTask(Peers& p, void* buf, size_t count, kf_dtype_t dtype, kf_op_t op);

  // Posts every receive and the sends of step 0. Call once.
  void start();
  // Completes the ring: afterwards buf holds the result on every rank and
  // every send has finished. Returns the first error.
  Status finish();

 private:
  Range segment(int s) const;

  Peers& p_;
  char* const buf_;
  const kf_dtype_t dtype_;
  const kf_op_t op_;
  const size_t es_;
  const int n_;
  const int r_;
  const Layout layout_;
  std::vector<char> scratch_;  // one slot of the longest segment per step
  size_t slot_bytes_ = 0;
  std::vector<TransferHandle> rs_recvs_, ag_recvs_, sends_;
};

}  // namespace kf
