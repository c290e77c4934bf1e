// AsyncEngine: the asynchronous named operations of one communicator
// (include/kungfu/async.h). It sits beside Engine (blocking calls) and shares
// its mailbox, transports and per-name sequence table.
//
// Life of an operation
//  1. submit(): takes the next sequence number of the name, posts receives
//     for every peer's signature frame and sends its own to every peer (step
//     kSigStep), cuts the operation into partitions, and queues them.
//  2. Scheduling: an operation is "confirmed" once every peer's signature
//     frame has arrived (every rank submitted it). Queued partitions of
//     confirmed operations are ordered by (priority, submission order,
//     partition index); the head starts while the bytes (and number, at most
//     kMaxCredited) of running partitions that weigh on it stay within the
//     credit window, and always when none runs, so any credit makes progress
//     (the rule, with its wider window for equal priorities, is in
//     sched/credit_window.h). On the head weigh the partitions this rank
//     started on its own credit and the running ones of confirmed operations
//     that a peer started and that come before the head in this rank's order
//     (the same operation or a more urgent one): so the ranks share one
//     window for the operations they agree on, instead of each adding a
//     partition of its own on top of the peers', while an urgent operation
//     still starts beside a peer's less urgent one. A rank that starts a
//     partition on its own tells every peer with a small frame (step
//     kStartStep; over TCP it rides along with the partition's first frame to
//     that peer, or leaves when the thread running the partition first waits
//     or ends it: never held by a sleeping thread; see TcpTransport::send). A
//     small single-partition operation starts at once on submission ("eager",
//     outside the credit, at most kMaxEager at once), announced in its
//     signature frame.
//  3. Deadlock freedom (DESIGN.md): a partition that a peer announced is
//     started here as soon as it is submitted here, whatever the credit;
//     announcements that arrive before the submission are remembered. Only
//     confirmed operations take credit, so credit is only held by partitions
//     that every rank runs (each announced to all, each on a thread of its
//     own from the elastic pool): they finish and give the credit back.
//     Eager and peer-started partitions hold no credit of their own, and
//     only peer-started ones of confirmed operations weigh on admission.
//     Hence every operation that all ranks submit completes, whatever the
//     submission order, credit or partition size. submit() never blocks.
//  4. Running: a partition is the blocking algorithm (src/algo) on a slice,
//     with its own frame keys: wire sequence = seq << 24 | partition. A
//     thread in kf_request_wait() runs its request's started partitions
//     itself when no worker took them yet (no hand-off for small ops), and
//     then those of other operations that every rank submitted, never one
//     still waiting for a peer's submission: the application may hold that
//     submission back until this thread returns (tests/mp/async_depend.cc).
//     The thread that finishes a partition runs the first partition its
//     release of credit admits (a continuation) rather than waking another
//     thread for it, unless the operation's completion could block first
//     (a peer's signature frame still missing, or a user callback): a
//     started partition never waits for a thread that may block.
//     Over TCP, an all_reduce partition that runs the plain ring is an
//     "event partition" instead (sched/async_event.h): no thread runs it to
//     its end; the thread that starts it posts its messages and returns,
//     and whichever thread sees one of its messages complete (mostly the
//     progress thread, which has just read it) carries it on. Its end
//     starts its continuation the same way.
//  5. Completion: after the last partition the operation waits for every
//     peer's signature frame, compares the full signatures (a mismatch fails
//     it with a text naming what differs), then completes the request.
//     While partitions wait for data they also watch the signature frames,
//     so a mismatch ends the operation on every rank instead of hanging.
//
// Fusion: a small all_reduce (at most KF_FUSION_THRESHOLD_BYTES, one
// partition) is "fused": submit() sends its signature frame and its data to
// every peer at once through the Fuser (sched/fusion.h), which packs the
// frames of operations submitted close together into one transfer per
// peer, and the operation completes by the one-shot algorithm
// (algo/one_shot.h) once every peer's data is in: on the submitting thread
// if it is in already at submission (the peers were ahead; its own frames
// then leave with the next flush: a wait or test of the request, or the
// fuser's cycle), else on a thread waiting for it, the completer thread, or
// a worker (failures). Whether an operation is fused is part of its
// signature.
//
// The lane: on a communicator whose ranks all share one host, all_reduce
// runs instead through the shared-memory arena of the blocking all_reduce
// (its own staging area, so it never meets a blocking call), in an order the
// ranks agree on through shared memory, with a fusion of its own (small
// ready operations share one pass): see sched/async_lane.h. The other
// operations run over the peer rings as above.
//
// Tuning and tracing (for src/sched online tuning and the timeline): the
// partition size and credit can be read and changed at run time; an
// observer sees submit/start/partition/finish events.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "algo/collectives.h"
#include "algo/host_layout.h"
#include "algo/strategy.h"
#include "base/pair_map.h"
#include "base/status.h"
#include "sched/async_event.h"
#include "sched/engine.h"
#include "sched/fusion.h"
#include "transport/transfer.h"

namespace kf {

struct AsyncOp;
struct AsyncPartition;
class AsyncLane;
class OpPeers;
class ShmTransport;
struct PartitionPlan;
using OpKey = std::pair<uint64_t, uint64_t>;  // (name hash, seq)

// Counters of the shared-memory lane (sched/async_lane.h), for tests and
// benchmarks.
struct LaneStats {
  uint64_t fused_passes = 0;  // passes that ran more than one operation
  uint64_t fused_ops = 0;     // the operations they ran
  uint64_t unmatched = 0;     // operations with records read but not all (now)
  uint64_t fuse_max = 0;      // the largest operation that shares passes (bytes)
};

// Ready-queue order: priority, then local submission order. The queue holds
// operations with queued partitions (taken in partition order).
struct QueueKey {
  int32_t priority;
  uint64_t order;
  AsyncOp* op;
  bool operator<(const QueueKey& o) const {
    if (priority != o.priority) return priority < o.priority;
    return order < o.order;
  }
};

// Announcements for operations not submitted here yet.
struct Remembered {
  uint32_t prefix = 0;          // partitions [0, prefix) started by some peer
  std::set<uint32_t> parts;     // further started partitions
  std::set<int> submitted_by;   // ranks whose signature frame arrived
  bool gave_up = false;         // a peer timed it out before this rank submitted it
  int64_t first_ns = 0;
  bool warned = false;
};


// What an asynchronous operation is: the full signature and the buffers.
struct AsyncOpSpec {
  std::string name;
  uint32_t kind = 0;  // an OpKind (sched/op_kind.h)
  uint64_t count = 0;
  kf_dtype_t dtype = KF_INT8;
  int32_t op = -1;    // kf_op_t, or -1 when the kind has none
  int32_t root = -1;  // or -1 when the kind has none
  const void* send = nullptr;
  void* recv = nullptr;
  int32_t priority = 0;
  uint64_t partition_bytes = 0;  // 0 = engine default
  // The strategy partitions of all_reduce, broadcast and all_gather run
  // (a kf::Strategy over *hosts, the communicator's layout, which outlives
  // the engine); -1 or no hosts: the flat algorithms. Read at submission,
  // so every rank uses the strategy in force at the same point of its call
  // sequence; it is part of the signature (a disagreement is a mismatch).
  int32_t strategy = -1;
  const HostLayout* hosts = nullptr;
  StrategyOptions strategy_opts;
  // Generic hook: an operation that carries its own body (e.g. the sparse
  // all_reduce). It runs as the operation's single partition over the
  // partition's Peers instead of the kind's algorithm; the submitter sets
  // partition_bytes = UINT64_MAX so that there is one partition. kind,
  // count, dtype, op and root still form its signature.
  std::function<Status(Peers&)> body;
  std::function<void(const Status&)> on_complete;  // called once, before done is visible
};

// Runs spec.on_complete (if any) with `st`, marking the calling thread as
// inside a completion callback meanwhile. Every engine path calls the
// callback through this.
void run_completion_callback(const AsyncOpSpec& spec, const Status& st);
// Whether the calling thread is inside a completion callback. A callback
// may run on the thread that drives the engine (the shared-memory lane's
// driver holds the lane while it runs), so waiting there for a request
// that is not complete could wait for itself: kf_request_wait* refuses it.
bool in_completion_callback();

// Trace events, delivered to the observer synchronously on the thread where
// they happen (keep the observer short; it must not call into the engine).
struct AsyncEvent {
  enum class Type { kSubmit, kStart, kPartitionDone, kFinish };
  Type type;
  const std::string* name;  // valid during the call only
  uint64_t seq;
  uint32_t partition;   // kStart / kPartitionDone; 0 otherwise
  uint32_t partitions;  // of the operation
  int32_t priority;
  uint64_t bytes;       // of the partition (kStart/kPartitionDone) or operation
  int64_t time_ns;      // steady clock
  int status;           // kf_status_t of kPartitionDone / kFinish
};
using AsyncObserver = std::function<void(const AsyncEvent&)>;

// The completion state a request handle points to.
class AsyncRequest {
 public:
  // A new request, its memory from a process-wide pool (base/block_pool.h).
  static std::shared_ptr<AsyncRequest> make();
  bool done() const;
  // Final status once done() (ok before; it does not change after).
  const Status& status() const;
  // Its message; valid (and unchanging) once done().
  const std::string& message() const { return status_.message(); }
  // Waits until done. `help` is tried first (it runs this request's
  // started partitions on the calling thread) until it finds nothing to do.
  void wait(const std::function<bool()>& help);
  // For kf_request_wait/test of a complete request: sends the fused frames
  // held back if the operation completed at its submission (before its own
  // frames left, see AsyncEngine::submit), else does nothing.
  void flush_held();

 private:
  friend class AsyncEngine;
  friend class AsyncLane;
  void finish(const Status& st);
  // Sleeps on cv_ until done or `woken()` (read under mu_), counted in
  // sleepers_: finish() reads sleepers_ after it sets done_ (both
  // sequentially consistent), so either it sees this sleeper and notifies
  // under mu_, or this sleeper sees done_.
  template <typename Woken>
  void sleep_until(Woken woken) {
    sleepers_.fetch_add(1);
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (!cv_) cv_.emplace();
      cv_->wait(lock, [&] { return woken() || done_.load(); });
    }
    sleepers_.fetch_sub(1);
  }
  // Wakes the threads in sleep_until(). Caller holds mu_.
  void notify_locked() {
    if (cv_) cv_->notify_all();
  }
  AsyncOp* op_ = nullptr;  // while pending; guarded by the engine's mutex
  bool lane_ = false;      // runs on the shared-memory lane (set before it is shared)
  mutable std::mutex mu_;
  // Where sleep_until() sleeps (mu_), made by the first sleeper: most
  // requests have none, and destroying a condition variable costs an
  // atomic instruction.
  std::optional<std::condition_variable> cv_;
  std::atomic<int> sleepers_{0};  // threads in sleep_until()
  std::atomic<bool> done_{false};
  Status status_;              // written by finish() only, before done_
  std::weak_ptr<Fuser> held_;  // see flush_held(); guarded by mu_
  // Set with held_ (by the submitting thread, before the handle is handed
  // out): flush_held() of every other request takes no lock.
  std::atomic<bool> maybe_held_{false};
};

// The requests a waiter waits for after the current one (the rest of a
// kf_request_wait_all): it runs their partitions too rather than hand them
// to another thread, as it would only wait for them next.
struct WaitRest {
  const AsyncRequest* const* reqs = nullptr;
  size_t n = 0;
  bool has(const AsyncRequest* r) const { return std::find(reqs, reqs + n, r) != reqs + n; }
};

class AsyncEngine {
 public:
  AsyncEngine(Engine* engine, const AlgoOptions& algo, int64_t timeout_ms);
  ~AsyncEngine();  // close()

  // Waits for pending operations (drain), ends what is left with
  // KF_ERR_ABORTED, and stops the threads. Idempotent; later submissions
  // and control frames are ignored.
  void close();

  // Submits one operation. If *out is set it becomes the operation's
  // completion state, else a new one is made into *out; *out is not
  // reassigned otherwise (a request handle's own state may be passed, which
  // a completion callback may read meanwhile). On success the operation may
  // already be complete (e.g. on a single rank).
  Status submit(AsyncOpSpec&& spec, std::shared_ptr<AsyncRequest>* out);

  // Waits until `req` is done (kf_request_wait). The calling thread runs
  // what it can meanwhile (help()); when there is nothing, it parks, and
  // the engine hands a parked waiter work it may run instead of waking a
  // worker: a task of its own operation, an admission, or a partition of an
  // operation every rank submitted (see "Running" above). It returns once
  // `req` is done and the partition this thread runs is not one of a
  // request in `rest` (those it runs on, as it would wait for them next).
  void wait(const std::shared_ptr<AsyncRequest>& req, const WaitRest& rest = WaitRest());

  // Runs started-but-unclaimed partitions of `req` on the calling thread
  // (or, with none, one of another operation every rank submitted), or
  // moves its data; true if it did something (call again). Sends the fused
  // frames held back first: whoever waits is done submitting. `rest` as
  // for wait().
  bool help(const std::shared_ptr<AsyncRequest>& req, const WaitRest& rest = WaitRest());
  // For kf_request_test: sends the fused frames held back, moves
  // shared-memory bytes once, and completes `req` here if its data is in.
  // Never blocks.
  void poll(const std::shared_ptr<AsyncRequest>& req);

  // Routes the all_reduce operations submitted from now on through the
  // shared-memory lane (sched/async_lane.h). Called once, before the first
  // submission, by every rank of a communicator whose ranks all share one
  // host; `shm` has a lane region and outlives the engine's close().
  void enable_lane(ShmTransport* shm, bool single_copy, size_t one_shot_bytes);
  bool lane_enabled() const { return lane_ != nullptr; }

  // Runs the all_reduce partitions that qualify as event partitions
  // (sched/async_event.h) from now on. Called once, before the first
  // submission, once the transports are up; does nothing unless every peer
  // is reached over TCP. The TCP transport must outlive close().
  void start_events();

  // Operation fusion, for tests and benchmarks: what the fuser packed so far
  // (zeros when fusion is off).
  Fuser::Stats fusion_stats() const;
  // The lane's counters (zeros without a lane).
  LaneStats lane_stats() const;
  // Event partitions started so far (sched/async_event.h), for tests.
  uint64_t events_started() const { return events_started_.load(std::memory_order_relaxed); }

  // Online tuning. Partition size applies to operations submitted after the
  // call; every rank must make the same change at the same point of its
  // submission sequence (the partition size is part of the signature, so a
  // disagreement is reported as a mismatch, never a hang). Credit is local
  // and takes effect at once. 0 restores the knob default.
  void set_partition_bytes(uint64_t bytes);
  void set_credit_bytes(uint64_t bytes);
  uint64_t partition_bytes() const;
  uint64_t credit_bytes() const;

  // Trace hook; replaces the previous one (empty = none). Thread safe.
  void set_observer(AsyncObserver obs);

  // Frames of step kSigStep / kStartStep / kGaveUpStep seen by the mailbox
  // (any thread). Returns true for a signature frame no receive will ever
  // take (of an operation finished here, or run on the lane): the mailbox
  // drops it instead of keeping it in its store of early messages.
  bool on_control_frame(int src, uint64_t name_hash, uint64_t wire_seq, uint32_t step,
                        uint32_t chunk);
  // Which of them the mailbox never keeps (they carry no data).
  static bool consumes(uint32_t step) { return step == kStartStep || step == kGaveUpStep; }

  // The communicator broke (peer lost): every pending operation fails with
  // `why` (queued partitions are dropped; running ones fail on their own).
  void on_broken(const Status& why);

  // Waits until no operation is pending (shutdown), at most `ms`.
  void drain(int64_t ms);

  static constexpr uint32_t kSigStep = 0xfffffff0u;
  static constexpr uint32_t kStartStep = 0xfffffff1u;
  // Sent, with no payload, by a rank whose operation timed out waiting for
  // some ranks' signature frames, to every peer: they fail it at once when
  // they submit it later (instead of completing it alone, a fused operation
  // whose peers' data is all in), or when it is still in progress there.
  static constexpr uint32_t kGaveUpStep = 0xfffffff3u;  // (0xfffffff2: kBundleStep)
  static constexpr int kPartitionBits = 24;
  static constexpr uint64_t kPartitionMask = (uint64_t(1) << kPartitionBits) - 1;
  // A single-partition operation of at most kEagerBytes starts at once on
  // submission (announced in its signature frame), without waiting for the
  // peers' signatures and without taking credit; at most kMaxEager at once.
  static constexpr uint64_t kEagerBytes = 64 * 1024;
  static constexpr uint32_t kMaxEager = 32;

 private:
  // Engine-mutex-held helpers (suffix _locked) and the pieces of an
  // operation's life: submission in async_engine.cc, admission and control
  // frames in async_schedule.cc, workers and waiters in async_wait.cc,
  // completion in async_finish.cc, fused operations in async_fused.cc.
  Status submit_to_lane(AsyncOpSpec&& spec, std::shared_ptr<AsyncRequest>* out);
  void admit_locked(std::vector<AsyncPartition*>* starts);
  AsyncPartition* admissible_locked();
  // Queues an admission task if the head of the ready queue may start now.
  void admit_soon_locked();
  // A peer started op's partition `index`: it starts here too, whatever the
  // credit; added to *starts for the caller to start if given, else
  // dispatched (or left to the drain that follows, start_on_drain_locked).
  void force_locked(AsyncOp* op, uint32_t index, std::vector<AsyncPartition*>* starts = nullptr);
  void dispatch_locked(AsyncPartition* p);
  void drop_queued_locked(AsyncOp* op);
  void confirm_locked(AsyncOp* op);
  void saw_signature_locked(AsyncOp* op, int src);
  AsyncPartition* admit_and_start(bool keep_one);
  AsyncPartition* dispatch_starts(std::vector<AsyncPartition*>* starts, bool keep_first);
  void announce(const std::vector<AsyncPartition*>& starts, const AsyncOp* skip, uint32_t prefix);
  void worker_loop();
  // Running a partition returns its continuation: a partition its
  // completion admitted, already marked running, for the same thread to run
  // next (no hand-off to another worker); null if none. run_chain() runs a
  // partition and its continuations; hand_off() gives a continuation to the
  // pool instead (a thread that must return, e.g. a waiter whose request is
  // complete, unless the continuation is of a request it waits for next).
  AsyncPartition* run_partition_task(AsyncPartition* p);
  void run_chain(AsyncPartition* p);
  void hand_off(AsyncPartition* p);
  void run_then_return(AsyncPartition* p, const std::shared_ptr<AsyncRequest>& req,
                       const WaitRest& rest);
  // A thread in wait() with nothing to run: sleeps on its request until it
  // is done or a task is handed to it (returned; null when done).
  struct Parked {
    AsyncRequest* req;
    AsyncPartition* task = nullptr;  // guarded by req->mu_ (set under mu_ too)
    bool handed = false;             // a task (maybe the null admission) was handed
  };
  bool park(const std::shared_ptr<AsyncRequest>& req, AsyncPartition** task);
  bool hand_to_parked_locked(AsyncPartition* p);
  void run_handed(AsyncPartition* p, const std::shared_ptr<AsyncRequest>& req,
                  const WaitRest& rest);
  Status run_planned(AsyncPartition* p);
  // With `may_block` false (the thread must not wait for peers: it drains
  // event partitions, maybe on a transport's thread), an operation whose
  // completion could wait is completed on a worker instead.
  AsyncPartition* partition_done(AsyncPartition* p, const Status& st, bool may_block = true);
  bool finalize_may_block(AsyncOp* op);
  // Queues op's finalize task for a worker (or a parked waiter).
  void finalize_on_worker_locked(AsyncOp* op);
  // Event partitions (async_event.cc).
  bool runs_as_event(const AsyncPartition* p) const;
  // Starts p and what the ends of failed ones admit; then drains.
  void start_event(AsyncPartition* p);
  // Starts p; if its operation failed, ends it and returns its continuation.
  AsyncPartition* launch_event(AsyncPartition* p);
  void drain_events();
  void advance_event(const std::shared_ptr<EventPartition>& e);
  // Ends p (partition_done without blocking); returns its continuation.
  AsyncPartition* end_event(AsyncPartition* p, const Status& st);
  // For a thread under mu_ that drains event partitions next (the TCP
  // progress thread reading a peer's control frame): p, forced to start,
  // or an admission, left to that drain instead of a woken worker. False
  // (nothing done) unless p is an event partition and a drain follows.
  bool start_on_drain_locked(AsyncPartition* p);
  bool admit_on_drain_locked();
  void kick_events(AsyncOp* o);
  bool events_running(AsyncOp* o);
  void expire_events_locked(AsyncOp* o);
  void stop_events();
  // The listener of an operation's signature receives (null: none needed).
  std::function<void()> signature_listener(const std::shared_ptr<AsyncOp>& op);
  Status check_signatures(AsyncOp* op);
  void finalize(AsyncOp* op);
  bool start_fused(AsyncOp* op, const std::shared_ptr<AsyncOp>& keep, bool keep_ready);
  void fused_event(const std::weak_ptr<AsyncOp>& op, bool data);
  void fused_ready_locked(AsyncOp* op, bool data_complete);
  void completer_loop();
  AsyncOp* take_completion_locked(const AsyncRequest* req, bool any);
  Status run_fused(AsyncOp* op);
  bool fusible(const AsyncOpSpec& spec, const PartitionPlan& plan, uint64_t bytes) const;
  void inspector_loop();
  void start_inspector_locked();
  // Ranks whose signature frames have not come, as text (and into `ranks`).
  std::string missing_ranks(AsyncOp* op, std::vector<int>* ranks = nullptr) const;
  void send_gave_up(const AsyncOp* o);
  void stop_failed_locked(AsyncOp* o);
  void emit(AsyncEvent::Type type, const AsyncOp& op, uint32_t partition, uint64_t bytes,
            const Status& st);
  Status wait_transfer(const TransferHandle& t, const Deadline& d);
  void emit_event(AsyncEvent::Type type, const std::string& name, uint64_t seq, uint32_t partition,
                  uint32_t partitions, int32_t priority, uint64_t bytes, const Status& st);
  void send_signature(int peer, const AsyncOpSpec& spec, uint64_t name_hash, uint64_t seq);

  Engine* const engine_;
  const AlgoOptions algo_;
  const int64_t timeout_ms_;
  const int64_t stall_warn_ms_;
  const int rank_;
  const int size_;
  std::atomic<uint64_t> partition_bytes_;
  std::atomic<uint64_t> credit_bytes_;
  const uint64_t fusion_threshold_;  // 0: fusion off
  // Null when fusion is off or size_ == 1. Shared with the requests of
  // operations completed at submission (AsyncRequest::flush_held).
  std::shared_ptr<Fuser> fuser_;

  mutable std::mutex mu_;
  std::condition_variable work_cv_;     // workers wait here for runnable partitions
  std::condition_variable inspect_cv_;  // the inspector sleeps here
  std::condition_variable drain_cv_;    // drain() waits here for pending_ to empty
  // The next sequence number, by name hash (key {name hash, 0}): a flat
  // table, so that a submission reads one cache line for it.
  PairMap<uint64_t> next_seq_;
  uint64_t next_order_ = 0;
  std::map<OpKey, std::shared_ptr<AsyncOp>> pending_;
  std::map<OpKey, Remembered> remembered_;
  std::set<QueueKey> ready_;  // confirmed operations with queued partitions
  uint32_t eager_running_ = 0;   // small partitions started at submission
  bool admit_task_queued_ = false;  // an admission task waits in runnable_
  std::deque<AsyncPartition*> runnable_;
  // Running partitions started on this rank's credit (credit_window.h).
  std::vector<AsyncPartition*> credited_;
  // Running partitions of confirmed operations that a peer started: they
  // weigh on admission like ours when they come first in our order.
  std::vector<AsyncPartition*> peer_started_;
  std::vector<std::thread> workers_;
  size_t idle_workers_ = 0;
  std::vector<Parked*> parked_;  // threads asleep in wait()
  bool stop_ = false;
  std::thread inspector_;
  bool inspector_started_ = false;
  bool inspector_sleeping_ = false;  // asleep without end: a submission wakes it
  uint64_t remembered_gen_ = 0;      // bumped when a remembered operation gets a submitter
  static constexpr int kInspectorLingerMs = 10;
  // Threads in help() driving transfers (read by the fuser's timer without
  // mu_). Whoever makes the fuser's `undriven` true (the last helper to
  // leave, the first fused operation to wait with none helping) wakes its
  // timer.
  std::atomic<uint32_t> helping_{0};
  std::atomic<int32_t> fused_waiting_ops_{0};  // fused operations in state kWaiting
  // Fused operations whose data is all in, for the completer thread (or a
  // thread in help()/poll(), which takes its own first).
  std::deque<AsyncOp*> completions_;
  std::thread completer_;
  std::condition_variable completer_cv_;
  bool completer_idle_ = false;

  // (Before lane_: the lane emits events through them until it is gone.)
  std::mutex obs_mu_;
  std::atomic<bool> has_observer_{false};
  AsyncObserver observer_;  // guarded by obs_mu_

  std::unique_ptr<AsyncLane> lane_;  // null: no lane
  // Signature frames sent for the lane, kept until sent; guarded by mu_.
  struct LaneReply {
    std::unique_ptr<OpPeers> peers;
    std::unique_ptr<char[]> buf;
    TransferHandle sent;
  };
  std::vector<LaneReply> lane_replies_;

  // Event partitions: null unless start_events() enabled them.
  std::shared_ptr<EventQueue> events_;
  std::mutex drain_events_mu_;  // held by the one thread draining events_
  std::atomic<uint64_t> events_started_{0};
  ScratchCache scratch_;
};

}  // namespace kf
