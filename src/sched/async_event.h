// Event partitions: all_reduce partitions of the message path (TCP) that no
// thread waits for. A partition is a RingTask (algo/ring_task.h) driven by
// events: starting it posts its receives and first send and returns; each
// completion of one of its transfers queues it (EventQueue), and whichever
// thread drains the queue (the TCP progress thread after its reads and
// writes, TcpTransport::set_progress_hook, or a thread that starts a
// partition) advances it as far as it can go without waiting. The last step
// ends the partition there (AsyncEngine::partition_done) and starts the
// partition its credit admits, the same way.
//
// Why: with a thread per running partition (the other path, async_wait.cc),
// a rank of a CPU-bound loopback job spends much of its time handing
// partitions between threads and switching among them, and each thread
// waits for a message that the progress thread has just read. Here the
// thread that reads a message carries the partition on at once, several
// partitions share one thread, and none blocks. perf/README.md (session 26)
// has the measurements.
//
// Which partitions: those whose thread path would run the plain ring
// (algo/select.cc uses_ring, no strategy) with at most kEventMaxChunks
// chunks per segment (its scratch holds every reduce-scatter message:
// (n - 1) / n of the partition), on a communicator whose peers are all
// reached over TCP (shared memory has no progress thread to drive them).
// Such a RingTask, cut into the blocking ring's chunks, sends exactly the
// messages of that ring (algo/ring.cc) and combines in the same order, so a
// rank that runs the partition on a thread instead (its peers on one host)
// meets it on the wire and ends with the same bits: the ranks
// need not agree on which path they take.
//
// Failures: a transfer that fails, an operation that failed elsewhere (a
// signature mismatch seen when a peer's signature frame arrives, a peer
// that gave up, a broken communicator) and the operation's deadline (the
// stall inspector) queue the partition, whose next advance withdraws what
// is pending and ends it with the error. Its completion never blocks the
// draining thread: one that could wait for peers (a signature frame still
// missing, a send still queued, a user callback) goes to a worker. The
// engine's observer (the timeline) is called on the draining thread, the
// progress thread among them: it must be quick and must not block.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "algo/ring_task.h"
#include "sched/op_peers.h"

namespace kf {

struct AsyncPartition;

// The most ring chunks per segment of an event partition (see above): at
// np 2 and the default 1 MiB chunk, partitions of up to 8 MiB. Its scratch
// is (n - 1) x this many chunks.
inline constexpr size_t kEventMaxChunks = 4;

struct EventPartition {
  EventPartition(AsyncPartition* p, std::unique_ptr<OpPeers> op_peers)
      : part(p), peers(std::move(op_peers)) {}

  AsyncPartition* const part;
  const std::unique_ptr<OpPeers> peers;
  std::unique_ptr<char[]> scratch;  // the ring's, from the ScratchCache
  size_t scratch_bytes = 0;
  std::unique_ptr<RingTask> ring;
  std::mutex mu;                     // one thread advances it at a time (then the op's mu)
  bool ended = false;                // guarded by mu
  std::atomic<bool> queued{false};   // in the EventQueue
};

// Event partitions with news, shared with their transfers' listeners (which
// may run after the engine closed: then they find it closed).
class EventQueue {
 public:
  // `wake` makes a drainer run soon (wakes the progress thread).
  explicit EventQueue(std::function<void()> wake) : wake_(std::move(wake)) {}

  // Queues `e` unless it is queued already or the queue is closed; with
  // `wake`, makes a drainer run. Any thread, possibly under mailbox locks:
  // takes only this queue's lock.
  void push(const std::shared_ptr<EventPartition>& e, bool wake);
  // Takes what is queued (each entry's `queued` flag is cleared).
  std::vector<std::shared_ptr<EventPartition>> take();
  // Work that a thread under the engine lock leaves to the drain that
  // follows on it (AsyncEngine::start_on_drain_locked): partitions to start
  // (marked running) and an admission to run. Never wakes a drainer.
  void push_start(AsyncPartition* p);
  void push_admit();
  // Takes the partitions to start; returns whether an admission was asked.
  bool take_starts(std::vector<AsyncPartition*>* starts);
  bool empty();
  // From now on push() does nothing.
  void close();

 private:
  const std::function<void()> wake_;
  std::mutex mu_;
  std::vector<std::shared_ptr<EventPartition>> queue_;
  std::vector<AsyncPartition*> starts_;
  bool admit_ = false;
  bool closed_ = false;
};

// Keeps the scratch memory of ended event partitions for the next ones: a
// fresh allocation of 128 KiB or more is a new mapping whose pages fault in
// on first use (in a first version, page faults took 18% of a 256 KiB
// partition's CPU time).
// At most kKeep blocks and kKeepBytes in all are kept (the larger blocks
// first: they serve every smaller request); nothing under AddressSanitizer.
class ScratchCache {
 public:
  static constexpr size_t kKeep = 16;
  static constexpr size_t kKeepBytes = size_t{64} << 20;
  // A block of at least `bytes` (not zero-filled); *got is its size.
  std::unique_ptr<char[]> take(size_t bytes, size_t* got);
  // Returns a block of `bytes` taken before, to keep or free.
  void give(std::unique_ptr<char[]> block, size_t bytes);
  // The bytes kept now (for tests).
  size_t kept_bytes() const;

 private:
  mutable std::mutex mu_;
  std::vector<std::pair<size_t, std::unique_ptr<char[]>>> free_;
  size_t kept_ = 0;  // the bytes of free_
};

}  // namespace kf
