// AsyncLane: asynchronous all_reduce on a communicator whose ranks all share
// one host, through the shared-memory arena of the blocking all_reduce
// (algo/shm_collectives.h, staging area 1, so it never meets a blocking
// call's buffers), in an order the ranks agree on through shared memory
// (transport/shm/lane_log.h), without a coordinator.
//
// Life of a lane operation
//  1. take_in() publishes a record (signature and priority; the data too, for
//     an operation of at most LaneRecord::kPayloadBytes) in this rank's ring;
//     after_take_in() rings the peers. Neither blocks: when the ring is full
//     (a peer lags by LaneLog::kRecords submissions) the record waits in
//     unpublished_ for a driver to publish it.
//  2. Matching: a driver (5.) reads the peers' records. An operation is
//     ready once every local rank published it. Records that disagree
//     (count, dtype, op, partition size, strategy) fail it on every rank
//     with a text saying what differs; it never runs. A tiny operation
//     completes right there: every rank reduces the same records in rank
//     order (the same bits everywhere), no log entry needed. Records wait
//     in a table (matches_) until the operation is submitted here; then
//     an operation that is not tiny (with at most 64 local ranks) takes
//     them in and counts the rest itself, comparing each with its own
//     signature: no table entry of its own, and no copy of the records
//     (a submission touches fewer cache lines, which a training step's
//     bulk data has flushed since the last one). A tiny operation keeps
//     every record in the table: it needs their data.
//  3. Order: a driver with nothing to run appends the next partition of
//     the most urgent ready operation (priority, then the appender's
//     submission order: any rank's choice will do, since the log is one) to
//     the shared log. Every rank runs the log's partitions in log order, one
//     at a time, through the arena. So an urgent operation overtakes the
//     queued partitions of bulky ones at the next partition boundary, and
//     the bytes in flight are one partition (the credit window). No
//     deadlock: every entry names an operation every rank submitted.
//     Fusion: when the most urgent ready operation is one partition of at
//     most a staging buffer, the appender packs it and the like ready
//     operations after it in priority order (same dtype and op, while
//     their bytes fit pass_bytes and the head's partition size) into one
//     pass: one batch of entries, appended at once, that every rank runs
//     as one all_reduce over their buffers laid end to end
//     (arena_all_reduce_pieces(): one shot with one barrier for all of
//     them, or staged rounds that span operations). Each operation keeps
//     its own buffers; the pass saves the barriers and log entries of
//     separate passes, and pipelines the rounds of operations that each
//     fill at most one. A longer operation is pipelined within its own
//     pass already, and runs alone: fused, two 1 MiB operations (two
//     rounds each at np 2) ran 1-2.5% slower than their own passes
//     (perf/README.md, session 33).
//  4. Timeout: a driver whose operation passed its deadline unready appends
//     a withdrawal; every rank that submitted it fails it with the timeout,
//     naming the ranks that never did, and a rank that submits it later
//     fails it at once. Entries are read before records, so a withdrawal
//     already in the log ends a tiny operation before its last record can
//     complete it. A stall warning is logged after KF_STALL_WARN_MS.
//     Tiny operations and timeouts: every rank must agree whether one
//     completed or timed out. Records carry their submitter's deadline; a
//     rank completes a tiny operation from its records on the spot only
//     while it is more than kTinyMarginMs (50 ms) before the earliest of
//     them (every rank computes the same), and a withdrawer reads the rings
//     once more after its own (no earlier) deadline passed, so it finds
//     such an operation ready and withdraws nothing. Closer to the deadline
//     ranks append a kTiny entry instead: the first of it and a withdrawal
//     in the log is every rank's verdict. (A rank counts its own record in
//     a match only once it is published: what it sees complete, every peer
//     can.)
//  5. Driving: one thread of a rank at a time: a thread in
//     kf_request_wait (help()), so an operation completes on the waiting
//     thread with no hand-off, else the lane thread. Submissions do not wake
//     that one (unless they leave it replies or deferred completions): it
//     sleeps on a WakeTimer (base/wake_timer.h) whose time a
//     submission sets, kGrace (200 us) ahead for an operation above the
//     fusion threshold, a cycle (KF_FUSION_CYCLE_US) for a small one. When
//     the time comes and no waiter drove meanwhile (nobody waits: a
//     backward pass submits and computes on), the thread drives. When a
//     waiter did, waiters lead: the thread looks again only after
//     kLaneWaiterCycles cycles, and submissions give waiters that long
//     too. Looks grow rarer (twice as long each time, up to
//     kLaneWaiterCyclesMax) while they find a waiter in the lane or nothing
//     pending; one that finds operations pending and nobody in the lane
//     brings them back to kLaneWaiterCycles, and one that finds nobody
//     drove since the last brings back kGrace too (the thread drives what
//     is pending). So while waiters drive, the lane thread wakes rarely
//     (on a busy machine each wake-up preempts a driver), and submissions
//     set its time once per look at most (a system call). A time is never
//     cancelled: clearing it costs a system call per burst (3 us in a
//     virtual machine, where the kernel reprograms its clock device), a
//     look that finds nothing one wake-up per look. Stale operations: at
//     a look that finds nobody in the lane, ready operations submitted
//     before the last look run on the lane thread, until they end or a
//     waiter comes: waiters drive up to the operations they wait for, so
//     those behind theirs that nobody waits for are not left to them.
//  6. Kind mismatch: a peer that submitted the same name and sequence as
//     another kind (or strategy) runs it on the message path and sends a
//     signature frame; the lane fails its operation and answers with its
//     own signature frame, so the peer fails too (both say what differs).
//  An operation that fails before every rank's record is read (4., 6.) is
//  forgotten: its records, read then or later, are dropped rather than left
//  waiting for a record that never comes (for the latest 1024 such).
// A failure inside a partition (a peer lost, a barrier timeout) leaves the
// ranks' barriers out of step: the communicator breaks, as it does for the
// blocking arena. On one host the lane replaces fusion for all_reduce.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "algo/shm_collectives.h"
#include "base/block_pool.h"
#include "base/deadline.h"
#include "base/latest_keys.h"
#include "base/pair_map.h"
#include "base/status.h"
#include "base/wake_timer.h"
#include "sched/async_engine.h"
#include "sched/engine.h"
#include "sched/ready_queue.h"
#include "transport/shm/lane_log.h"
#include "transport/shm/shm_transport.h"

namespace kf {

struct LaneOp;

struct LaneOptions {
  int64_t timeout_ms = -1;      // per operation; -1: none
  int64_t stall_warn_ms = 0;    // 0: no warnings
  bool single_copy = false;     // the communicator's agreed single-copy mode
  size_t one_shot_bytes = 0;    // KF_SHM_ONE_SHOT_BYTES
  uint64_t wake_bytes = 16384;  // operations above this get kGrace, not a cycle (see 5.)
  int64_t cycle_us = 1000;      // else the lane thread drives after this
  // Fusion (see 3.): single-partition operations of at most a staging
  // buffer share a pass of at most pass_bytes bytes (KF_FUSION_PASS_BYTES)
  // and the partition size of its most urgent operation. 0: one operation
  // per pass.
  uint64_t pass_bytes = 0;
};

class AsyncLane {
 public:
  // Sinks into the engine: trace events, and the signature frame a peer
  // that ran the operation on the message path needs to see the mismatch.
  using Emit = std::function<void(AsyncEvent::Type, const std::string& name, uint64_t seq,
                                  uint32_t partition, uint32_t partitions, int32_t priority,
                                  uint64_t bytes, const Status& st)>;
  using Reply =
      std::function<void(int peer, const AsyncOpSpec& spec, uint64_t name_hash, uint64_t seq)>;

  // `engine` and `shm` outlive the lane; shm has a lane region. Events go
  // to `emit` only while *observed (the engine's flag, which outlives the
  // lane) is true: most runs have no observer, and a call through a
  // std::function per event is four calls per operation.
  AsyncLane(Engine* engine, ShmTransport* shm, const LaneOptions& opts,
            const std::atomic<bool>* observed, Emit emit, Reply reply);
  ~AsyncLane();  // close()

  // The region size for ShmOptions::lane_bytes.
  static size_t region_bytes(int local_size) { return LaneLog::region_bytes(local_size); }

  // Whether `spec` runs here: an all_reduce with the flat or automatic
  // strategy and no body of its own. The same answer on every rank.
  static bool accepts(const AsyncOpSpec& spec);

  // A submission in two steps: take_in() under the engine's lock (it runs no
  // completion callback; only the trace observer sees the submission), then
  // after_take_in() without it.
  struct Intake {
    std::vector<std::shared_ptr<LaneOp>> done;  // ended at once: completed by after_take_in()
    bool deferred = false;                      // ... or left to a driver (inside a callback)
    bool foreign = false;                       // failed by peers' signature frames
  };
  // Takes in `spec` as (name_hash, seq), completing `req`. `foreign`: ranks
  // whose signature frame for this name and sequence already arrived (they
  // ran something else under it: a mismatch). `partition_bytes`: the
  // engine's partition size.
  void take_in(AsyncOpSpec&& spec, uint64_t name_hash, uint64_t seq, uint64_t partition_bytes,
               const std::vector<int>& foreign, const std::shared_ptr<AsyncRequest>& req,
               Intake* intake);
  // Completes what take_in() ended and rings the peers and the lane thread.
  void after_take_in(Intake* intake);

  // (name_hash, seq) failed on the message path here: the records peers
  // publish for it (they ran it on the lane: a mismatch) are dropped.
  void forget(uint64_t name_hash, uint64_t seq);

  // A peer's signature frame for (name_hash, seq) arrived: if that is a lane
  // operation here, it fails (the peer submitted another kind). Returns
  // whether it was one.
  bool on_foreign_signature(int src, uint64_t name_hash, uint64_t seq);

  // For kf_request_wait: drives the lane on the calling thread for a slice
  // of time, until `req` (a lane request) completes, or with `any` (for
  // kf_request_wait_any) until any operation does, or waits a little while
  // another thread drives. True while `req` is not done (call again).
  bool help(const std::shared_ptr<AsyncRequest>& req, bool any);
  // For kf_request_test: one non-blocking step if no thread drives.
  void poll();

  // Its counters (for tests and benchmarks).
  LaneStats stats() const;

  // The communicator broke: every pending operation fails with `why`.
  void on_broken(const Status& why);
  // Operations still pending.
  size_t pending() const;
  // Fails what is pending with KF_ERR_ABORTED and stops the lane thread.
  void close();

 private:
  // The records of one operation seen so far, by local rank: those read
  // before this rank submitted it, and all of a tiny one's (see 2.).
  struct Match {
    std::vector<LaneRecord> rec;
    std::vector<char> have;
    int count = 0;
  };
  struct Pending {  // a signature frame owed to a peer (see Reply)
    int peer;
    std::shared_ptr<LaneOp> op;
  };
  using Done = std::vector<std::shared_ptr<LaneOp>>;
  using KeyHash = U64PairHash;
  // A finished match's record storage stays in the table for the next.
  using MatchMap = PairMap<Match, /*Recycle=*/true>;
  using OpMap = PairMap<std::shared_ptr<LaneOp>>;

  bool step();
  void ingest_locked();
  void ingest_locked(Done* done);
  // Moves finished_ onto `done` and clears left_: every collection of it.
  void take_finished_locked(Done* done);
  void match_record_locked(int local, const LaneRecord& r);
  // Whether `op` keeps its match itself rather than in matches_: with at
  // most 64 local ranks, an operation whose data does not travel in the
  // records (see 2.).
  bool in_op(const LaneOp& op) const;
  // Counts local rank `local`'s record `r` in in_op() operation `op`.
  void match_in_op_locked(LaneOp* op, int local, const LaneRecord& r);
  void check_ready_locked(LaneOp* op);
  bool in_time_locked(const Match& m) const;
  void reduce_tiny_locked(LaneOp* op, MatchMap::iterator mit, Done* done);
  void run_tiny(const LaneEntry& e, Done* done);
  void erase_match_locked(MatchMap::iterator it);
  void forget_locked(const OpKey& key);
  void foreign_failed_locked(const std::shared_ptr<LaneOp>& op);
  uint64_t run_entry(const LaneEntry& e);
  uint64_t run_fused(const LaneEntry& head, Done* done);
  Status run_partition(LaneOp* op, uint32_t part);
  Status run_fused_pass();
  size_t decide_locked();
  bool fusable(const LaneOp& op) const;
  void end_locked(LaneOp* op, const Status& st, Done* done);
  void complete(const Done& done);
  bool insert_locked(std::shared_ptr<LaneOp>* op);
  // A trace event to emit_, only while the engine has an observer.
  void emit(AsyncEvent::Type type, const std::string& name, uint64_t seq, uint32_t partition,
            uint32_t partitions, int32_t priority, uint64_t bytes, const Status& st) const {
    if (observed_->load(std::memory_order_relaxed)) {
      emit_(type, name, seq, partition, partitions, priority, bytes, st);
    }
  }
  void flush_unpublished_locked();
  // The lane thread looks next at `at` if that is earlier than alarm_
  // (the timer follows if the thread sleeps).
  void alarm_locked(Clock::time_point at);
  // Makes the timer hold alarm_ (before the thread sleeps).
  void arm_locked();
  // After a step outside the lane thread: rings it for completions left in
  // finished_ (see left_).
  void hand_left_over();
  // How long a submission of `bytes` gives waiters before the lane thread
  // drives: look_ while waiters lead, else kGrace above wake_bytes,
  // else a cycle.
  std::chrono::microseconds grace_for(uint64_t bytes) const;
  bool pending_locked() const { return !ops_.empty() || !unpublished_.empty(); }
  // Marks the ready operations submitted before `order` (see next_order_)
  // stale: the lane thread drives until they ended (stale_left_). Returns
  // how many stale ones are pending.
  size_t mark_stale_locked(uint64_t order);
  void ring_peers();
  // Drives until `stop` says so, `slice` passes (negative: no limit), or
  // the lane breaks or closes.
  void drive(const std::function<bool()>& stop, std::chrono::nanoseconds slice);
  void thread_loop();
  // The local ranks whose record of (name_hash, seq) has not been read;
  // `op`: the operation, if this rank submitted it (null: look it up).
  std::string missing_locked(uint64_t name_hash, uint64_t seq, const LaneOp* op = nullptr) const;
  LaneRecord record_of(const LaneOp& op) const;

  Engine* const engine_;
  ShmTransport* const shm_;
  const LaneOptions opts_;
  const std::atomic<bool>* const observed_;
  const Emit emit_;
  const Reply reply_;
  LaneLog log_;
  const int me_;              // local index
  const int n_;               // local ranks (== communicator size)
  // The largest operation that shares fused passes (see 3.): pass_bytes,
  // and a staging buffer: one round of the staged all_reduce.
  const uint64_t fuse_max_;
  // The memory of finished LaneOps, for the next (declared before every
  // container of them: destroyed after).
  BlockPool op_pool_{1024};
  int next_buffer_ = 0;       // staging buffer alternation of area 1 (driver only)
  uint64_t pos_ = 0;          // log entries processed (driver only)
  unsigned quiet_steps_ = 0;  // driver only
  // The entries a driver decided to append, and the operations of the
  // fused pass it runs (driver only; reused, no allocation per pass). While
  // the pass runs its operations are marked running, so they stay in ops_
  // until the driver ends them: fused_ holds plain pointers (no reference
  // counted per operation), and is emptied if the pass does not run.
  LaneEntry batch_[LaneLog::kMaxBatch];
  std::vector<LaneOp*> fused_;
  std::vector<ArenaPiece> fused_pieces_;
  std::atomic<uint64_t> fused_passes_{0}, fused_ops_{0};
  // Set when something a driver must see changed here (an operation became
  // ready or ended off the driver, a record or reply waits).
  std::atomic<bool> dirty_{true};

  mutable std::mutex mu_;
  // The two tables (base/pair_map.h: an erasure or insertion moves other
  // entries, so find again after either). Neither allocates per operation.
  OpMap ops_;         // pending here
  size_t unready_ = 0;  // of ops_, those not ready (every rank's record not in yet)
  MatchMap matches_;    // records seen, by operation
  ReadyQueue<LaneOp> ready_;
  // Withdrawn before this rank submitted them (the latest kForgotten: one
  // submitted later than that waits for its own timeout instead).
  std::set<OpKey> withdrawn_;
  std::deque<OpKey> withdrawn_order_;
  // Operations that failed here before every rank's record was read (see
  // forget_locked()): their records are dropped. The latest kForgotten.
  std::unordered_set<OpKey, KeyHash> forgotten_;
  std::deque<OpKey> forgotten_order_;
  std::vector<LaneRecord> unpublished_;  // this rank's ring was full
  std::vector<Pending> replies_;         // sent by the next driver step
  // Failed because peers ran them on the message path; later frames from
  // other peers get a reply too. Only the rare mismatches land here (the
  // latest kForgotten: an older one's late frame gets no reply, and its
  // sender times out instead of reporting the mismatch).
  std::map<OpKey, std::shared_ptr<LaneOp>> foreign_failed_;
  std::deque<OpKey> foreign_order_;
  // Operations step() and run_entry() completed, kept until the driver next
  // has nothing to do, its next step, or close() (driver only).
  Done step_done_;
  Done entry_done_;
  Done finished_;   // failed off the driver (e.g. on a transport thread): completed by a driver
  // Set when matching completed operations into finished_, cleared where
  // they are collected (mu_): a driver's step takes them; help() and poll()
  // ring the lane thread for those left after their last step
  // (hand_left_over()). (Clear at each collection, so that a run of tiny
  // operations, which complete that way, costs those calls no lock.)
  std::atomic<bool> left_{false};
  std::atomic<uint64_t> completions_{0};  // operations completed so far
  uint64_t next_order_ = 0;
  bool closed_ = false;
  Status broken_;
  std::atomic<bool> ended_{false};  // broken_ set or closed_: drivers stop

  // Driving: one thread at a time holds driver_mu_.
  std::mutex driver_mu_;
  std::atomic<int> want_{0};                // threads in help() that want to drive
  std::atomic<uint64_t> waiter_drives_{0};  // times a thread in help() stopped driving
  std::condition_variable handoff_cv_;      // threads in help() wait here for the driver; mu_
  // The lane thread sleeps on thread_timer_ until rung (work only it does,
  // closing) or the time alarm_ (max: none; mu_), which the timer holds
  // (armed_, mu_) while the thread sleeps (thread_awake_ false, mu_).
  // waiters_lead_ (mu_): the last time that came found a waiter in help(),
  // or one that had driven meanwhile (waiter_drives_ beyond drives_seen_,
  // which looks and a burst's first submission refresh; mu_); submissions
  // then give waiters look_ (kLaneWaiterCycles cycles, doubling up to
  // kLaneWaiterCyclesMax while looks find a waiter in the lane or nothing
  // pending: see 5.; mu_) rather than kGrace.
  // look_order_ (mu_): next_order_ at the last look (operations ordered
  // below it were submitted before it).
  WakeTimer thread_timer_;
  Clock::time_point alarm_ = Clock::time_point::max();
  Clock::time_point armed_ = Clock::time_point::max();
  bool thread_awake_ = true;
  uint64_t drives_seen_ = 0;
  bool waiters_lead_ = false;
  uint64_t look_order_ = 0;
  size_t stale_left_ = 0;                  // operations marked stale, pending (mu_)
  const std::chrono::microseconds cycle_;  // KF_FUSION_CYCLE_US, at least 1 us
  std::chrono::microseconds look_;
  std::thread thread_;
};

}  // namespace kf
