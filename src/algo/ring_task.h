// RingTask: an in-place ring all_reduce cut into start() and finish(), so a
// composite algorithm can put the first messages of one ring on the wire and
// do other work (the intra-host phases of the next slice) before it waits.
// Transports move posted messages in the background (TCP has its progress
// thread), so the link stays busy meanwhile. Or driven by events instead:
// advance() runs whatever steps can run now and never waits, so one thread
// can carry many rings at once (the asynchronous engine's event partitions,
// sched/async_event.h).
//
// Same ring as ring.h: reduce-scatter steps 0 .. n-2, all-gather steps
// n-1 .. 2n-3, one message per chunk of a segment and step (one chunk per
// segment unless the constructor's chunk_elems cuts them), in the order the
// blocking ring sends them. start() posts every receive of both halves at
// once (reduce-scatter ones into scratch, all-gather ones straight into the
// buffer) and the first sends. Receiving an all-gather
// segment in place early is safe: it can only arrive after its owner
// finished the segment, which needs this rank's contribution to it, so this
// rank has already reduced and sent everything it held of that segment.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "algo/common.h"
#include "algo/peers.h"
#include "kungfu/types.h"

namespace kf {

class RingTask {
 public:
  // All ranks of `p` must run a RingTask with the same count, dtype, op and
  // chunk_elems. KF_AVG: the owner of each segment divides it before
  // sharing it (as ring.h does), so every rank ends with the same bits.
  // `buf` must stay valid until the task finished. `chunk_elems`: the
  // longest message in elements, as ring.h's chunk (algo/common.h
  // chunk_elems()); 0: one chunk per segment. With the blocking ring's
  // chunk, its messages are that ring's, so ranks that run ring_all_reduce
  // meet it with the same bits.
  RingTask(Peers& p, void* buf, size_t count, kf_dtype_t dtype, kf_op_t op, size_t chunk_elems = 0);

  // The scratch it needs for the received partial results: a slot per
  // message of the reduce-scatter, about (n - 1) / n of the buffer.
  size_t scratch_bytes() const { return items_ * layout_.max_chunk() * es_; }
  // Lends it `bytes` of the caller's memory at `scratch` (which must outlive
  // the task) before start(); unless it holds scratch_bytes(), the task
  // allocates its own, as it does when none is lent.
  void use_scratch(char* scratch, size_t bytes) {
    scratch_ = scratch;
    scratch_size_ = bytes;
  }

  // Out of place: this rank's contribution is read from `send` (count
  // elements, left unchanged, valid until the task finished) instead of
  // from buf, which then only receives the result. Call before start().
  void read_input_from(const void* send) { local_ = static_cast<const char*>(send); }

  // Posts every receive and the sends of step 0. Call once. With
  // `gather_now` false (advance() only), the all-gather receives are posted
  // by advance() once the sends that read the segments they write have
  // finished (as the blocking ring does), so that no receive writes a
  // segment a send of this rank may still read in the memory model's eyes
  // (the kernel orders it anyway; ThreadSanitizer cannot see that).
  void start(bool gather_now = true);

  // Blocking use, on one thread:
  // Runs the reduce-scatter steps: waits for each partial result, combines
  // and passes it on; ends having posted the first all-gather send. Called
  // once, after start(); the all-gather then proceeds on the wire while the
  // caller does other work.
  Status reduce_scatter();
  // Completes the ring (runs reduce_scatter() first if the caller has not):
  // afterwards buf holds the result on every rank and every send has
  // finished. Returns the first error.
  Status finish();

  // Event-driven use, instead of the two above: runs every step whose
  // message has arrived (combining it and posting the sends that follow)
  // without waiting, and sets *done once buf holds the result and every
  // send has finished. Call after start() and again whenever one of the
  // task's transfers completes; never after done or an error. Deadlock
  // free with any number of tasks on one thread, since no call waits.
  Status advance(bool* done);

 private:
  // Message i of a phase: chunk i % K of step i / K (K chunks per segment).
  int step_of(size_t i) const { return static_cast<int>(i / chunks_); }
  // Reduce-scatter message i: the left neighbour's partial result of
  // segment r - step - 2, this chunk of it.
  Range rs_range(size_t i) const;
  // All-gather message i: this chunk of finished segment r - step - 1.
  Range ag_range(size_t i) const;
  // Reduce-scatter message i in: combine, pass the result on.
  void combine_and_pass(size_t i);
  // All-gather message i in: pass it on unless its step is the last.
  void pass_on(size_t i);

  Peers& p_;
  char* const buf_;
  const char* local_;  // this rank's contribution: buf_, or read_input_from()
  const kf_dtype_t dtype_;
  const kf_op_t op_;
  const size_t es_;
  const size_t count_;
  const int n_;
  const int r_;
  const Layout layout_;
  const size_t chunks_;  // per segment (K)
  const size_t items_;   // messages per phase: (n - 1) * K
  std::unique_ptr<char[]> own_scratch_;
  char* scratch_ = nullptr;
  size_t scratch_size_ = 0;  // of the caller's scratch_
  size_t slot_bytes_ = 0;    // one slot of the longest chunk per reduce-scatter message
  std::vector<TransferHandle> rs_recvs_, ag_recvs_, sends_;
  bool reduced_ = false;
  size_t rs_next_ = 0, ag_next_ = 0;  // advance(): the next message of each phase
  size_t sends_done_ = 0;             // advance(): sends known finished
  // The sends that read segments the all-gather receives write (step 0 and
  // the reduce-scatter's partial results, not the finished own segment):
  // sends_[0, reading_sends_), all pushed before any of step n - 1.
  size_t reading_sends_ = 0;
  bool gather_posted_ = false;
  void post_gather();
};

}  // namespace kf
