// Shared-memory transport between the ranks of one communicator that share
// a host. Every rank owns one segment holding a ring per local sender and
// its doorbell; peers map it and write frames into their ring, exactly as
// they would into a TCP stream (same framing, same Mailbox).
//
// There is no progress thread: the threads that wait for transfers move the
// bytes (progress()), spinning briefly and then sleeping on their doorbell,
// which senders ring. So small messages never pay a thread hand-off, and an
// idle communicator uses no CPU. Peer failure is detected by the TCP
// connection every pair of ranks keeps anyway.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "transport/frame_stream.h"
#include "transport/mailbox.h"
#include "transport/shm/doorbell.h"
#include "transport/shm/shm_ring.h"
#include "transport/shm/shm_segment.h"

namespace kf {

struct ShmOptions {
  int rank = 0;
  uint32_t epoch = 1;
  std::vector<int> local_ranks;  // sorted; includes this rank
  std::string tag;               // unique per communicator instance on this host
  size_t ring_bytes = 1 << 20;   // power of two
  size_t staging_bytes = 1 << 20;  // each of the two staging buffers (multiple of 64)
  // Bytes of the region each rank offers the asynchronous lane
  // (sched/async_lane.h); 0: no lane, and only staging area 0 exists.
  size_t lane_bytes = 0;
  bool oversubscribed = false;   // more local ranks than cores: spin less
};

class ShmTransport {
 public:
  // Step 1 of set-up: create this rank's segment.
  static Status create(const ShmOptions& opts, Mailbox* mailbox, std::unique_ptr<ShmTransport>* out);
  ~ShmTransport();

  // Step 2, after every local rank finished step 1: map the peers' segments.
  Status map_peers();
  // Step 3, after every local rank finished step 2: remove our segment's name.
  void unlink_own() { own_.unlink(); }

  bool reaches(int rank) const;
  // Called (from a waiting thread) when a peer's stream is malformed: the
  // communicator must break. Set before use.
  void set_on_error(std::function<void(const Status&)> f) { on_error_ = std::move(f); }
  Doorbell* bell() const { return bell_; }

  // Queues the data frame of send transfer `t` and writes what fits now.
  void send(const TransferHandle& t, const FrameHeader& h);
  void cancel_send(const TransferHandle& t, const Status& why);
  // Fails every queued send (the communicator broke) and wakes waiters.
  void fail_all(const Status& why);

  // Moves bytes on every connection; returns true if anything moved.
  bool progress();
  // Waits for `t`, driving progress, until it completes or the deadline passes.
  Status wait(const TransferHandle& t, const Deadline& deadline);

  // The staging areas used by the shared-memory collectives (algo/arena.h).
  // Area 0 serves the blocking calls; area 1 (present when lane_bytes > 0)
  // the asynchronous lane, so the two never share buffers or barriers.
  // Each area has two staging buffers per rank and its own barrier.
  // Local indices: position in local_ranks.
  static constexpr int kStagingAreas = 2;
  int areas() const { return opts_.lane_bytes > 0 ? 2 : 1; }
  int local_index() const { return local_index(opts_.rank); }
  int local_size() const { return static_cast<int>(opts_.local_ranks.size()); }
  size_t staging_bytes() const { return opts_.staging_bytes; }
  char* staging(int area, int local, int which) const;
  // Waits until every local rank has entered as many barriers of `area` as
  // this one; `health` reports a broken communicator. Spins, then sleeps.
  Status staging_barrier(int area, const Deadline& deadline, const std::function<Status()>& health);

  // The signature digest of the operation using staging buffer `which` of
  // `area` (published before its first barrier, read after it).
  void publish_digest(int area, int which, uint32_t digest);
  uint32_t digest_of(int area, int local, int which) const;

  // Single-copy reads of peers' memory (process_vm_readv). A rank exposes
  // one address per operation and area (before a barrier); peers read it.
  void expose(int area, const void* addr);
  const void* exposed_by(int area, int local) const;

  // The lane region of local rank `local` (lane_bytes, zeroed at creation,
  // 64-byte aligned), or null without a lane; and its doorbell, which wakes
  // that rank's threads sleeping in staging barriers or on the lane.
  char* lane_region(int local) const;
  void ring(int local) const;
  Status read_peer(int local, const void* remote, void* dst, size_t len) const;
  // Start-up probe, collective: expose_probe(); barrier; probe_single_copy()
  // tells whether this rank may read every local peer (the kernel may forbid
  // it: ptrace scope, seccomp, containers).
  void expose_probe();
  bool probe_single_copy() const;

 private:
  struct Conn;
  ShmTransport(const ShmOptions& opts, Mailbox* mailbox);
  std::string segment_name(int rank) const;
  size_t segment_bytes() const;
  size_t staging_offset() const;
  int local_index(int rank) const;
  RingHeader* ring_header(char* segment, int slot) const;

  const ShmOptions opts_;
  Mailbox* const mailbox_;
  ShmSegment own_;
  Doorbell* bell_ = nullptr;
  std::vector<ShmSegment> peer_segments_;
  std::vector<char*> segment_of_local_;  // every local rank's segment, mapped here
  uint64_t barrier_generation_[kStagingAreas] = {0, 0};
  std::function<void(const Status&)> on_error_;
  std::vector<std::unique_ptr<Conn>> conns_;  // indexed by global rank; null if not local
};

}  // namespace kf
