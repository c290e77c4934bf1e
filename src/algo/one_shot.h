// One-shot all_reduce for small buffers: every rank sends its whole buffer to
// every other rank at once, then combines the n contributions in rank order,
// so every rank computes the same bits. One message latency instead of
// log2(n) rounds, for (n - 1) times the buffer on the wire per rank: the
// algorithm of fused asynchronous all_reduces (sched/fusion.h), whose
// messages are all known at submission and so can travel together.
//
// The two halves can run on different threads: start() posts every transfer
// (the submitting thread), finish() waits and reduces (whichever thread
// completes the operation).
#pragma once

#include <cstddef>
#include <vector>

#include "algo/peers.h"
#include "kungfu/types.h"

namespace kf {

class OneShotAllReduce {
 public:
  // Posts the receives and the sends, all on Tag{0, 0}. `send` (count
  // elements of dtype) must stay valid and unchanged until finish()
  // returns. count may be 0.
  void start(Peers& p, const void* send, size_t count, kf_dtype_t dtype, kf_op_t op);
  // Waits for every transfer, then writes the result into `recv` (which may
  // be the send buffer). Returns the first error of the operation.
  Status finish(Peers& p, void* recv);
  // The receives start() posted (until finish() succeeds), for a caller
  // that moves bytes while it waits.
  const std::vector<TransferHandle>& receives() const { return recvs_; }

 private:
  const void* send_ = nullptr;
  size_t count_ = 0;
  kf_dtype_t dtype_ = KF_FLOAT32;
  kf_op_t op_ = KF_SUM;
  std::vector<char> scratch_;  // every peer's contribution, by rank
  std::vector<TransferHandle> recvs_, sends_;
};

// start() and finish() on the calling thread.
Status one_shot_all_reduce(Peers& p, const void* send, void* recv, size_t count, kf_dtype_t dtype,
                           kf_op_t op);

}  // namespace kf
