#include "sched/async_lane.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "algo/reduce_kernels.h"
#include "algo/shm_collectives.h"
#include "algo/strategy.h"
#include "base/cpu_relax.h"
#include "base/deadline.h"
#include "base/dtype.h"
#include "base/log.h"
#include "sched/async_signature.h"
#include "sched/async_texts.h"
#include "sched/op_arena.h"
#include "sched/op_kind.h"

namespace kf {
namespace {

// A log entry's verb. kFuse: one of the `reserved` entries of a fused pass
// (appended together, the first at the position a driver reads next).
// kTiny: complete a tiny operation from its records (see in_time_locked()).
enum Verb : uint32_t { kRun = 1, kWithdraw = 2, kFuse = 3, kTiny = 4 };

// How long a driver polls before it sleeps on its doorbell, and how long the
// lane thread keeps its cycle after the last operation before it sleeps
// until a submission wakes it.
constexpr auto kSpin = std::chrono::microseconds(50);
constexpr int64_t kLingerNs = 10 * 1000000;
constexpr int kSleepMs = 5;
// A waiter drives for at most this long per help() call, so that
// kf_request_wait_any sees other requests complete.
constexpr auto kSlice = std::chrono::milliseconds(2);
// How long a large operation waits for a thread to drive it before the lane
// thread does (a training step's backward pass submits and computes on).
constexpr auto kGrace = std::chrono::microseconds(200);
// While threads in help() drive, the lane thread looks only every this many
// cycles (each look preempts a spinning driver on a busy machine).
constexpr int kWaiterCycles = 8;
// At most this many nodes of finished entries are kept for reuse, per table.
constexpr size_t kNodePool = 64;
// The latest operations that failed before all their records were read
// whose late records are dropped (see forget_locked()).
constexpr size_t kForgotten = 1024;
// A tiny operation whose records are all in completes on the spot only this
// long before its deadline: more than a tick of the coarse clock the stamps
// and the check use (1-10 ms), so that a withdrawal, which comes after the
// deadline, is never appended for it (see in_time_locked()).
constexpr int64_t kTinyMarginMs = 50;

}  // namespace

struct LaneOp {
  explicit LaneOp(AsyncOpSpec&& s) : spec(std::move(s)) {}
  AsyncOpSpec spec;
  uint64_t name_hash = 0;
  uint64_t seq = 0;
  uint64_t order = 0;
  uint64_t part_elems = 1;
  uint32_t parts = 1;
  uint32_t done_parts = 0;  // driver only (under mu_)
  int64_t submit_ns = 0;
  int64_t deadline_ns = INT64_MAX;  // steady clock; INT64_MAX: none
  std::shared_ptr<AsyncRequest> req;
  bool ready = false;    // every rank submitted it alike
  bool tiny_late = false;  // tiny, ready too close to its deadline: via the log (kTiny)
  bool running = false;  // a partition is in the arena (the driver ends it)
  bool warned = false;   // stall warning logged
  Status result;
  OpKey key() const { return {name_hash, seq}; }
  uint64_t bytes() const { return spec.count * dtype_size(spec.dtype); }
  // The arena's signature digest of `count` elements of it.
  uint32_t digest(uint64_t count) const {
    OpSignature s;
    s.kind = spec.kind;
    s.count = count;
    s.dtype = static_cast<int32_t>(spec.dtype);
    s.op = spec.op;
    s.root = spec.root;
    return s.digest();
  }
  std::string label() const { return "operation '" + spec.name + "' #" + std::to_string(seq); }
};

AsyncLane::AsyncLane(Engine* engine, ShmTransport* shm, const LaneOptions& opts, Emit emit,
                     Reply reply)
    : engine_(engine),
      shm_(shm),
      opts_(opts),
      emit_(std::move(emit)),
      reply_(std::move(reply)),
      log_(
          [shm] {
            std::vector<char*> regions;
            for (int i = 0; i < shm->local_size(); ++i) regions.push_back(shm->lane_region(i));
            return regions;
          }(),
          shm->local_index()),
      me_(shm->local_index()),
      n_(shm->local_size()) {
  thread_ = std::thread([this] { thread_loop(); });
}

AsyncLane::~AsyncLane() {
  close();
}

bool AsyncLane::accepts(const AsyncOpSpec& spec) {
  return spec.kind == kAllReduce && !spec.body &&
         (spec.strategy < 0 || spec.strategy == static_cast<int32_t>(Strategy::kAuto) ||
          spec.strategy == static_cast<int32_t>(Strategy::kFlat));
}

LaneRecord AsyncLane::record_of(const LaneOp& op) const {
  LaneRecord r;
  r.name_hash = op.name_hash;
  r.seq = op.seq;
  r.count = op.spec.count;
  r.partition_elems = op.part_elems;
  r.kind = op.spec.kind;
  r.dtype = static_cast<int32_t>(op.spec.dtype);
  r.op = op.spec.op;
  r.root = op.spec.root;
  r.strategy = op.spec.strategy;
  r.priority = op.spec.priority;
  // (A deadline beyond 2^30 ms, 12 days, is as good as none: the stamps'
  // differences must fit 31 bits.)
  if (op.deadline_ns != INT64_MAX && opts_.timeout_ms < (int64_t{1} << 30)) {
    r.flags |= LaneRecord::kHasDeadline;
    r.deadline_ms = static_cast<uint32_t>(op.deadline_ns / 1000000);
  }
  return r;
}

// ---- submission -----------------------------------------------------------

void AsyncLane::submit(AsyncOpSpec spec, uint64_t name_hash, uint64_t seq, uint64_t partition_bytes,
                       const std::vector<int>& foreign, const std::shared_ptr<AsyncRequest>& req) {
  auto op = std::make_shared<LaneOp>(std::move(spec));
  const size_t es = dtype_size(op->spec.dtype);
  const uint64_t pbytes = op->spec.partition_bytes > 0 ? op->spec.partition_bytes : partition_bytes;
  op->part_elems = std::max<uint64_t>(1, pbytes / es);
  op->parts = static_cast<uint32_t>(
      std::max<uint64_t>(1, (op->spec.count + op->part_elems - 1) / op->part_elems));
  op->name_hash = name_hash;
  op->seq = seq;
  op->req = req;
  // A coarse stamp (a per-operation cost): the deadline and the stall
  // warning may come up to a clock tick (a few ms) early.
  op->submit_ns = now_coarse_ns();
  if (opts_.timeout_ms >= 0) op->deadline_ns = op->submit_ns + opts_.timeout_ms * 1000000;
  const uint64_t bytes = op->spec.count * es;
  emit_(AsyncEvent::Type::kSubmit, op->spec.name, seq, 0, op->parts, op->spec.priority, bytes,
        Status::ok());

  Done done;
  bool wake = false;
  bool deferred = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    op->order = next_order_++;
    if (!foreign.empty()) {
      op->result = invalid_usage(op->label() + ": ranks called it with different arguments: rank " +
                                 std::to_string(foreign.front()) +
                                 " submitted another kind of operation or strategy (this rank: "
                                 "all_reduce, flat)");
      for (int src : foreign) replies_.push_back({src, op});
      foreign_failed_locked(op);
      forget_locked(op->key());
      done.push_back(op);
    } else if (closed_ || !broken_.is_ok()) {
      op->result = closed_ ? aborted_error("the communicator is being destroyed: cannot run '" +
                                           op->spec.name + "'")
                           : Status(broken_.code(), op->label() + ": " + broken_.message());
      done.push_back(op);
    } else if (withdrawn_.erase(op->key()) > 0) {
      op->result = timeout_error(timed_out_text(op->label(), opts_.timeout_ms, gave_up_text()));
      done.push_back(op);  // (forgotten when the withdrawal was read)
    } else if (!insert_locked(op)) {
      // Two names with one 64-bit hash, at the same sequence number.
      op->result = internal_error(op->label() +
                                  ": its name's hash collides with that of another "
                                  "pending operation; rename one of them");
      done.push_back(op);
    } else {
      LaneRecord rec = record_of(*op);
      if (bytes > 0 && bytes <= LaneRecord::kPayloadBytes) {
        std::memcpy(rec.payload, op->spec.send, bytes);  // a tiny operation travels in its record
        rec.payload_bytes = static_cast<uint16_t>(bytes);
      }
      // Counted in its match only once published: what this rank sees
      // complete, every peer can.
      if (unpublished_.empty() && log_.publish(rec)) {
        match_record_locked(me_, rec);
      } else {
        unpublished_.push_back(rec);  // the ring is full: a driver publishes it later
        flush_unpublished_locked();
      }
      if (!finished_.empty()) done.swap(finished_);  // a tiny operation, all records in
      if (bytes > opts_.wake_bytes) urgent_ = true;
      // Wake the lane thread only out of a wait that this changes (no
      // system call per submission while it waits out a grace or drives).
      // Nor while a waiter drives or drove since the thread last looked
      // (it will be back).
      const bool waiter = want_.load() > 0 || waiter_drives_.load() != thread_seen_drives_;
      wake = thread_wait_ == ThreadWait::kIdle ||
             (urgent_ && !waiter && thread_wait_ == ThreadWait::kCycle);
      // Woken once: the submissions that follow before the thread runs (on
      // a busy machine, all of a step's) make no system call of their own.
      if (wake) thread_wait_ = ThreadWait::kNone;
    }
    // Inside a completion callback, what completes here goes to the lane
    // thread instead (async.h): a callback that submits again must not nest
    // the next callback on its stack. (Asked only when something completes
    // here: a thread-local read in a shared library costs a call.)
    if (!done.empty() && !closed_ && in_completion_callback()) {
      for (auto& d : done) finished_.push_back(std::move(d));
      done.clear();
      wake = true;
      deferred = true;
    }
  }
  dirty_.store(true);
  if (deferred) shm_->ring(me_);                  // a driver asleep on the bell takes them
  if (!foreign.empty()) thread_cv_.notify_one();  // the lane thread sends the replies
  complete(done);
  if (!foreign.empty()) return;
  ring_peers();
  if (wake) thread_cv_.notify_one();
}

// Into ops_ (a kept node if there is one), counted as unready. False if an
// operation with its key is pending already.
bool AsyncLane::insert_locked(const std::shared_ptr<LaneOp>& op) {
  bool inserted;
  if (op_nodes_.empty()) {
    inserted = ops_.emplace(op->key(), op).second;
  } else {
    OpMap::node_type node = std::move(op_nodes_.back());
    op_nodes_.pop_back();
    node.key() = op->key();
    node.mapped() = op;
    auto r = ops_.insert(std::move(node));
    inserted = r.inserted;
    if (!inserted) {
      r.node.mapped().reset();
      op_nodes_.push_back(std::move(r.node));
    }
  }
  if (inserted) ++unready_;
  return inserted;
}

// Publishes what the ring has room for, in order, each then counted in its
// match.
void AsyncLane::flush_unpublished_locked() {
  if (unpublished_.empty()) return;
  size_t i = 0;
  while (i < unpublished_.size() && log_.publish(unpublished_[i])) {
    match_record_locked(me_, unpublished_[i]);
    ++i;
  }
  unpublished_.erase(unpublished_.begin(), unpublished_.begin() + static_cast<ptrdiff_t>(i));
}

void AsyncLane::ring_peers() {
  for (int j = 0; j < n_; ++j) {
    if (j != me_) shm_->ring(j);
  }
}

void AsyncLane::forget(uint64_t name_hash, uint64_t seq) {
  std::lock_guard<std::mutex> lock(mu_);
  forget_locked({name_hash, seq});
}

bool AsyncLane::on_foreign_signature(int src, uint64_t name_hash, uint64_t seq) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = ops_.find({name_hash, seq});
    if (it == ops_.end()) {
      // Failed here by an earlier rank's frame: this rank waits for ours too.
      auto f = foreign_failed_.find({name_hash, seq});
      if (f == foreign_failed_.end()) return false;
      replies_.push_back({src, f->second});
      dirty_.store(true);
      thread_cv_.notify_one();
      return true;
    }
    std::shared_ptr<LaneOp> op = it->second;
    replies_.push_back({src, op});
    foreign_failed_locked(op);
    // (A ready operation cannot meet this: a rank that sent a signature
    // frame published no record; it then completes as it is.)
    // On a transport thread: a driver completes it (callbacks run there).
    if (!op->ready) {
      forget_locked(op->key());
      end_locked(op.get(),
                 invalid_usage(op->label() + ": ranks called it with different arguments: rank " +
                               std::to_string(src) +
                               " submitted another kind of operation or strategy (this rank: "
                               "all_reduce, flat)"),
                 &finished_);
    }
  }
  dirty_.store(true);
  thread_cv_.notify_one();
  return true;
}

// ---- matching -------------------------------------------------------------

void AsyncLane::ingest_locked() {
  LaneRecord r;
  for (int j = 0; j < n_; ++j) {
    if (j == me_) continue;
    while (log_.take(j, &r)) match_record_locked(j, r);
  }
}

// ingest_locked(), and what that completed (tiny operations, mismatches)
// onto `done`.
void AsyncLane::ingest_locked(Done* done) {
  ingest_locked();
  done->insert(done->end(), finished_.begin(), finished_.end());
  finished_.clear();
}

void AsyncLane::match_record_locked(int local, const LaneRecord& r) {
  const OpKey key{r.name_hash, r.seq};
  if (!forgotten_.empty() && forgotten_.count(key) > 0) return;  // it failed here already
  auto it = matches_.find(key);
  if (it == matches_.end()) {
    if (match_nodes_.empty()) {
      Match fresh;
      fresh.rec.resize(static_cast<size_t>(n_));
      fresh.have.assign(static_cast<size_t>(n_), 0);
      it = matches_.emplace(key, std::move(fresh)).first;
    } else {
      MatchMap::node_type node = std::move(match_nodes_.back());
      match_nodes_.pop_back();
      node.key() = key;
      it = matches_.insert(std::move(node)).position;
    }
  }
  Match& m = it->second;
  if (!m.have[static_cast<size_t>(local)]) {
    m.have[static_cast<size_t>(local)] = 1;
    m.rec[static_cast<size_t>(local)] = r;
    ++m.count;
  }
  if (m.count < n_) return;
  auto op = ops_.find(key);
  if (op != ops_.end()) check_ready_locked(op->second.get());
}

namespace {
SigRecord sig_of(const LaneRecord& r, const std::string& name) {
  SigRecord s;
  s.kind = r.kind;
  s.count = r.count;
  s.dtype = r.dtype;
  s.op = r.op;
  s.root = r.root;
  s.partition_elems = r.partition_elems;
  s.strategy = r.strategy;
  s.name = name;
  return s;
}
}  // namespace

// Every rank's record is in: a mismatch every rank sees alike, or ready. A
// tiny operation (its data in the records) completes here and now: every
// rank reduces the same records in rank order, so no log entry is needed.
void AsyncLane::check_ready_locked(LaneOp* op) {
  auto mit = matches_.find(op->key());
  Match& m = mit->second;
  const LaneRecord& mine = m.rec[static_cast<size_t>(me_)];
  std::string diff;
  for (int j = 0; j < n_ && diff.empty(); ++j) {
    const LaneRecord& r = m.rec[static_cast<size_t>(j)];
    if (j == me_ || (r.count == mine.count && r.partition_elems == mine.partition_elems &&
                     r.kind == mine.kind && r.dtype == mine.dtype && r.op == mine.op &&
                     r.root == mine.root && r.strategy == mine.strategy)) {
      continue;
    }
    diff = sig_difference(sig_of(mine, op->spec.name), me_, sig_of(r, op->spec.name), j);
  }
  if (!diff.empty()) {
    erase_match_locked(mit);
    end_locked(op,
               invalid_usage(op->label() + ": ranks called it with different arguments: " + diff),
               &finished_);
    return;
  }
  const uint64_t bytes = op->bytes();
  const bool tiny = bytes > 0 && bytes <= LaneRecord::kPayloadBytes;
  if (tiny && in_time_locked(m)) {
    reduce_tiny_locked(op, mit, &finished_);  // completes it
    return;
  }
  // A tiny operation too close to its deadline keeps its records for the
  // log's verdict (kTiny, or a withdrawal appended first).
  if (tiny) {
    op->tiny_late = true;
  } else {
    erase_match_locked(mit);
  }
  op->ready = true;
  --unready_;
  ready_.insert({{op->spec.priority, op->order}, op});
}

// Whether a tiny operation whose records are all in (`m`) may complete here
// and now, without the log: if it is more than kTinyMarginMs before the
// earliest of the deadlines in the records (the same figure on every rank,
// whatever each rank's KF_TIMEOUT_MS). A rank withdraws an operation only
// after its own deadline, which is no earlier, and reads the rings once
// more before it does: every record was published by then, so it finds the
// operation ready and withdraws nothing. Past that point ranks ask the log
// (kTiny): a withdrawal or the completion, whichever comes first, holds for
// every rank.
bool AsyncLane::in_time_locked(const Match& m) const {
  const uint32_t now = static_cast<uint32_t>(now_coarse_ns() / 1000000);
  int64_t left = INT64_MAX;  // ms to the earliest deadline
  for (const LaneRecord& r : m.rec) {
    // Stamps of a 32-bit ms clock: differences, wrap-safe over 24 days.
    if (r.flags & LaneRecord::kHasDeadline) {
      left = std::min<int64_t>(left, static_cast<int32_t>(r.deadline_ms - now));
    }
  }
  return left > kTinyMarginMs;
}

// Completes tiny `op` from its records (`mit`, all in): every rank reduces
// the same records in rank order, so every rank gets the same bits.
void AsyncLane::reduce_tiny_locked(LaneOp* op, MatchMap::iterator mit, Done* done) {
  const Match& m = mit->second;
  const kf_op_t rop = static_cast<kf_op_t>(op->spec.op);
  const size_t count = static_cast<size_t>(op->spec.count);
  reduce_to(op->spec.dtype, rop, op->spec.recv, m.rec[0].payload, m.rec[1].payload, count);
  for (int j = 2; j < n_; ++j) {
    reduce_into(op->spec.dtype, rop, op->spec.recv, m.rec[static_cast<size_t>(j)].payload, count);
  }
  if (rop == KF_AVG) finish_average(op->spec.dtype, op->spec.recv, count, n_);
  erase_match_locked(mit);
  end_locked(op, Status::ok(), done);
}

// The log's verdict on a tiny operation (kTiny): complete it from its
// records, unless it ended here already (completed in time, or withdrawn by
// an earlier entry).
void AsyncLane::run_tiny(const LaneEntry& e, Done* done) {
  std::lock_guard<std::mutex> lock(mu_);
  const OpKey key{e.name_hash, e.seq};
  if (ops_.find(key) == ops_.end()) return;
  auto mit = matches_.find(key);
  if (mit == matches_.end() || mit->second.count < n_) {
    // Every rank published its record before the entry was appended.
    ingest_locked(done);
    mit = matches_.find(key);
  }
  auto it = ops_.find(key);
  if (it == ops_.end()) return;  // (a signature mismatch the records just showed)
  if (mit == matches_.end() || mit->second.count < n_) {
    end_locked(it->second.get(),
               internal_error(it->second->label() + ": the lane lost the records of a tiny "
                                                    "operation"),
               done);
    return;
  }
  reduce_tiny_locked(it->second.get(), mit, done);
}

// Keeps the node of a finished match, with its record storage, for the next.
void AsyncLane::erase_match_locked(MatchMap::iterator it) {
  if (match_nodes_.size() >= kNodePool) {
    matches_.erase(it);
    return;
  }
  MatchMap::node_type node = matches_.extract(it);
  Match& m = node.mapped();
  std::fill(m.have.begin(), m.have.end(), 0);
  m.count = 0;
  match_nodes_.push_back(std::move(node));
}

// `key` failed here before every rank's record was read (a withdrawal, or a
// peer that ran it on the message path): its records read so far are
// dropped, and so are those read later, so that they leave no match behind.
// (Such an operation never runs: a rank that submits it later fails it at
// once, and a rank that ran it elsewhere publishes no record.)
void AsyncLane::forget_locked(const OpKey& key) {
  auto m = matches_.find(key);
  if (m != matches_.end()) erase_match_locked(m);
  // Nor is this rank's own record published any more, if it still waits.
  unpublished_.erase(std::remove_if(unpublished_.begin(), unpublished_.end(),
                                    [&](const LaneRecord& r) {
                                      return r.name_hash == key.first && r.seq == key.second;
                                    }),
                     unpublished_.end());
  if (forgotten_.insert(key).second) keep_latest(&forgotten_, &forgotten_order_, key, kForgotten);
  // Nor do the frames a peer sent of it on the message path (a kind
  // mismatch) stay in the store of early messages.
  engine_->mailbox().forget(key.first, key.second, AsyncEngine::kPartitionBits);
}

// Keeps `op` (failed by a peer's signature frame) to answer later frames.
void AsyncLane::foreign_failed_locked(const std::shared_ptr<LaneOp>& op) {
  if (foreign_failed_.emplace(op->key(), op).second) {
    keep_latest(&foreign_failed_, &foreign_order_, op->key(), kForgotten);
  }
}

// Ranks (local indices, which are the ranks: every rank is local) whose
// record of the operation has not been read.
std::string AsyncLane::missing_locked(uint64_t name_hash, uint64_t seq) const {
  auto it = matches_.find({name_hash, seq});
  std::string out;
  for (int j = 0; j < n_; ++j) {
    // (This rank submitted it: its record may still wait to be published.)
    if (j == me_ || (it != matches_.end() && it->second.have[static_cast<size_t>(j)])) continue;
    out += (out.empty() ? "" : ", ") + std::to_string(j);
  }
  return out;
}

// Ends `op` with `st` (success too): out of the tables, onto `done`.
void AsyncLane::end_locked(LaneOp* op, const Status& st, Done* done) {
  auto it = ops_.find(op->key());
  if (it == ops_.end()) return;
  op->result = st;
  if (op->ready) {
    ready_.erase({{op->spec.priority, op->order}, op});
  } else {
    --unready_;
  }
  done->push_back(std::move(it->second));
  if (op_nodes_.size() >= kNodePool) {
    ops_.erase(it);
  } else {
    op_nodes_.push_back(ops_.extract(it));  // its pointer was moved out
  }
}

void AsyncLane::complete(const Done& done) {
  for (const auto& op : done) {
    emit_(AsyncEvent::Type::kFinish, op->spec.name, op->seq, 0, op->parts, op->spec.priority,
          op->bytes(), op->result);
    run_completion_callback(op->spec, op->result);
    op->req->finish(op->result);
  }
  if (!done.empty()) completions_.fetch_add(done.size());
}

// ---- the log --------------------------------------------------------------

// Whether `op` may share a fused pass: one partition of more than a record's
// payload (tiny ones complete from the records) and at most a pass.
bool AsyncLane::fusable(const LaneOp& op) const {
  const uint64_t bytes = op.bytes();
  return op.parts == 1 && bytes > LaneRecord::kPayloadBytes && bytes <= opts_.pass_bytes;
}

// What to append at the log's end, into batch_ (returns how many entries; 0:
// nothing): a withdrawal of an operation that timed out unready, else the
// next partition of the most urgent ready operation, or, when that one is
// one partition, a fused pass of it and the single-partition ready
// operations after it.
size_t AsyncLane::decide_locked() {
  int64_t now = -1;  // read at the first unready operation: none, no clock
  const int64_t warn_ns = opts_.stall_warn_ms * 1000000;
  // Only unready operations have deadlines to watch: the scan ends at the
  // last of them (with none, a training step's hundreds of ready operations
  // stay out of the cache).
  size_t seen = 0;
  for (auto it = ops_.begin(); seen < unready_ && it != ops_.end(); ++it) {
    LaneOp* op = it->second.get();
    if (op->ready) continue;
    ++seen;
    if (now < 0) now = now_ns();
    if (now >= op->deadline_ns) {
      // The rings once more, read after the clock: a record published before
      // another rank completed a tiny operation in time is read now (see
      // in_time_locked()). That may end or ready operations: the scan ends.
      const OpKey key = op->key();
      ingest_locked();
      auto again = ops_.find(key);
      if (again == ops_.end() || again->second->ready) {
        dirty_.store(true, std::memory_order_relaxed);  // the next step decides anew
        return 0;
      }
      batch_[0] = LaneEntry{};
      batch_[0].name_hash = key.first;
      batch_[0].seq = key.second;
      batch_[0].verb = kWithdraw;
      return 1;
    }
    if (!op->warned && warn_ns > 0 && now - op->submit_ns >= warn_ns) {
      op->warned = true;
      KF_LOG_WARN(stall_text(op->label(), me_, (now - op->submit_ns) / 1000000,
                             missing_locked(op->name_hash, op->seq)));
    }
  }
  if (ready_.empty()) return 0;
  auto entry = [](const LaneOp& op, uint32_t verb) {
    LaneEntry e;
    e.name_hash = op.name_hash;
    e.seq = op.seq;
    e.part = op.done_parts;
    e.verb = verb;
    return e;
  };
  const LaneOp& head = *ready_.begin()->second;
  size_t n = 1;
  if (fusable(head)) {
    // In priority order, up to the first that does not fit: fusion never
    // lets an operation overtake a more urgent one. A pass holds at most
    // the head's partition, so it delays the head (it completes with the
    // pass) and a newly submitted urgent operation no more than a
    // partition would.
    const uint64_t limit =
        std::min<uint64_t>(opts_.pass_bytes, head.part_elems * dtype_size(head.spec.dtype));
    uint64_t bytes = head.bytes();
    for (auto it = std::next(ready_.begin()); it != ready_.end() && n < LaneLog::kMaxBatch; ++it) {
      const LaneOp& op = *it->second;
      if (!fusable(op) || op.spec.dtype != head.spec.dtype || op.spec.op != head.spec.op) break;
      if (bytes + op.bytes() > limit) break;
      bytes += op.bytes();
      batch_[n++] = entry(op, kFuse);
    }
  }
  batch_[0] = entry(head, n > 1 ? kFuse : head.tiny_late ? kTiny : kRun);
  if (n > 1) {
    for (size_t i = 0; i < n; ++i) batch_[i].reserved = n;
  }
  return n;
}

Status AsyncLane::run_partition(LaneOp* op, uint32_t part) {
  const size_t es = dtype_size(op->spec.dtype);
  const uint64_t begin = static_cast<uint64_t>(part) * op->part_elems;
  const uint64_t count =
      op->spec.count > begin ? std::min(op->part_elems, op->spec.count - begin) : 0;
  const uint64_t bytes = count * es;
  emit_(AsyncEvent::Type::kStart, op->spec.name, op->seq, part, op->parts, op->spec.priority, bytes,
        Status::ok());
  OpArena arena(shm_, 1, engine_, Deadline::after_ms(opts_.timeout_ms), &next_buffer_,
                opts_.single_copy);
  const char* send = static_cast<const char*>(op->spec.send);
  char* recv = static_cast<char*>(op->spec.recv);
  Status st = arena_all_reduce(arena, op->digest(count), count > 0 ? send + begin * es : send,
                               count > 0 ? recv + begin * es : recv, count, op->spec.dtype,
                               static_cast<kf_op_t>(op->spec.op), opts_.one_shot_bytes);
  emit_(AsyncEvent::Type::kPartitionDone, op->spec.name, op->seq, part, op->parts,
        op->spec.priority, bytes, st);
  return st;
}

// The operations of fused_ in one pass (their signatures were checked
// through the records: the digest only guards the arena).
Status AsyncLane::run_fused_pass() {
  std::vector<ArenaPiece>& pieces = fused_pieces_;
  pieces.clear();
  uint32_t digest = 0;
  for (const auto& op : fused_) {
    emit_(AsyncEvent::Type::kStart, op->spec.name, op->seq, 0, 1, op->spec.priority, op->bytes(),
          Status::ok());
    pieces.push_back({op->spec.send, op->spec.recv, static_cast<size_t>(op->spec.count)});
    digest = digest * 0x01000193u ^ op->digest(op->spec.count);
  }
  const LaneOp& head = *fused_.front();
  OpArena arena(shm_, 1, engine_, Deadline::after_ms(opts_.timeout_ms), &next_buffer_,
                opts_.single_copy);
  Status st = arena_all_reduce_pieces(arena, digest, pieces.data(), pieces.size(), head.spec.dtype,
                                      static_cast<kf_op_t>(head.spec.op), opts_.one_shot_bytes);
  for (const auto& op : fused_) {
    emit_(AsyncEvent::Type::kPartitionDone, op->spec.name, op->seq, 0, 1, op->spec.priority,
          op->bytes(), st);
  }
  if (st.is_ok()) {
    fused_passes_.fetch_add(1, std::memory_order_relaxed);
    fused_ops_.fetch_add(fused_.size(), std::memory_order_relaxed);
  }
  return st;
}

// Processes the fused pass whose first entry (at pos_) is `head`, onto
// `done`; returns its number of entries (all appended with the first).
uint64_t AsyncLane::run_fused(const LaneEntry& head, Done* done) {
  const uint64_t n = head.reserved;
  fused_.clear();
  bool in_order = n >= 2 && n <= LaneLog::kMaxBatch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (uint64_t i = 0; in_order && i < n; ++i) {
      in_order =
          log_.entry(pos_ + i, &batch_[i]) && batch_[i].verb == kFuse && batch_[i].reserved == n;
    }
    auto ready = [this](const LaneEntry& e) -> const std::shared_ptr<LaneOp>* {
      auto it = ops_.find({e.name_hash, e.seq});
      return it != ops_.end() && it->second->ready ? &it->second : nullptr;
    };
    for (uint64_t i = 0; in_order && i < n; ++i) {
      if (ready(batch_[i])) continue;
      // Every rank published its record before the batch was appended: what
      // is not read yet is in the rings now.
      ingest_locked(done);
      break;
    }
    for (uint64_t i = 0; in_order && i < n; ++i) {
      const std::shared_ptr<LaneOp>* op = ready(batch_[i]);
      in_order = op && (*op)->parts == 1 && (*op)->done_parts == 0;
      if (in_order) fused_.push_back(*op);
    }
    if (in_order) {
      for (const auto& op : fused_) op->running = true;  // on_broken() leaves them to us
    }
  }
  Status st = in_order ? run_fused_pass()
                       : internal_error(
                             "the asynchronous shared-memory lane lost its order "
                             "(fused entry " +
                             std::to_string(pos_) + ")");
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& op : fused_) {
      op->running = false;
      if (!st.is_ok()) continue;
      op->done_parts = 1;
      end_locked(op.get(),
                 broken_.is_ok() ? Status::ok()
                                 : Status(broken_.code(), op->label() + ": " + broken_.message()),
                 done);
    }
  }
  fused_.clear();
  if (!st.is_ok()) {
    engine_->abort(st);
    on_broken(st);
  }
  return in_order ? n : 1;
}

// Processes one log entry, or the batch of a fused pass it starts (every
// rank does, in log order); returns the number of entries processed.
uint64_t AsyncLane::run_entry(const LaneEntry& e) {
  Done& done = entry_done_;  // the driver's: its buffer is reused
  done.clear();
  if (e.verb == kFuse) {
    const uint64_t n = run_fused(e, &done);
    complete(done);
    return n;
  }
  if (e.verb == kTiny) {
    run_tiny(e, &done);
    complete(done);
    return 1;
  }
  std::shared_ptr<LaneOp> op;
  bool in_order = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = ops_.find({e.name_hash, e.seq});
    if (it != ops_.end()) op = it->second;
    if (e.verb == kWithdraw) {
      if (op) {
        // Out of the table first, so that the records read next cannot
        // complete it; they tell who never submitted it.
        end_locked(op.get(), Status::ok(), &done);
        ingest_locked();
        const std::string missing = missing_locked(e.name_hash, e.seq);
        op->result = timeout_error(
            timed_out_text(op->label(), opts_.timeout_ms,
                           missing.empty() ? gave_up_text() : never_submitted_text(missing)));
      } else {
        // (The key leaves the table early if this rank submits it.)
        if (withdrawn_.insert({e.name_hash, e.seq}).second) {
          keep_latest(&withdrawn_, &withdrawn_order_, OpKey{e.name_hash, e.seq}, kForgotten);
        }
      }
      forget_locked({e.name_hash, e.seq});
    } else {
      // Every rank published its record before any rank could append this
      // entry: what is not read yet is in the rings now.
      if (op && !op->ready) {
        ingest_locked(&done);
      }
      in_order = op && op->ready && e.part == op->done_parts;
      if (in_order) op->running = true;  // on_broken() leaves it to us
    }
  }
  if (e.verb == kRun) {
    Status st = in_order ? run_partition(op.get(), e.part)
                         : internal_error(
                               "the asynchronous shared-memory lane lost its order "
                               "(entry " +
                               std::to_string(pos_) + ")");
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (op) op->running = false;
      if (st.is_ok() && !broken_.is_ok()) {
        end_locked(op.get(), Status(broken_.code(), op->label() + ": " + broken_.message()), &done);
      } else if (st.is_ok() && ++op->done_parts == op->parts) {
        end_locked(op.get(), Status::ok(), &done);
      }
    }
    if (!st.is_ok()) {
      // The ranks' barriers are out of step: nothing can run on the lane
      // (nor on the communicator) any more.
      engine_->abort(st);
      on_broken(st);
    }
  }
  complete(done);
  return 1;
}

// One step of the driver: true if it did something. Without news (a peer's
// record or a log entry) or a local change (dirty_), it looks at the clock
// (deadlines, warnings) only every 64th call.
bool AsyncLane::step() {
  // (A relaxed look first: the exchange is a locked instruction per poll.)
  const bool dirty = dirty_.load(std::memory_order_relaxed) && dirty_.exchange(false);
  if (!dirty && !log_.news(pos_) && (++quiet_steps_ & 63) != 0) return false;
  Done& done = step_done_;  // the driver's: its buffer is reused
  done.clear();
  std::vector<Pending> replies;
  LaneEntry e;
  bool have = false, appended = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    done.swap(finished_);
    replies.swap(replies_);
    if (broken_.is_ok()) {
      flush_unpublished_locked();
      // The log first: a withdrawal already there must be seen before the
      // records that would complete a tiny operation it ends (run_entry()
      // reads the records a run entry needs).
      have = log_.entry(pos_, &e);
      if (!have) {
        ingest_locked(&done);
        if (const size_t n = decide_locked()) {
          have = appended = log_.append(pos_, batch_, n);
          if (appended) {
            e = batch_[0];
          } else {
            have = log_.entry(pos_, &e);  // another rank appended first
          }
        }
      }
    }
  }
  for (auto& r : replies) {
    reply_(r.peer, r.op->spec, r.op->name_hash, r.op->seq);
  }
  complete(done);
  // (The flag is this driver's own hint, and what it announces is under mu_:
  // no ordering is needed. A plain store, where a sequentially consistent
  // one is a locked exchange on x86 that would wait for the log position
  // stored just before to reach the other ranks.)
  if (!have) {
    if (done.empty() && replies.empty()) return false;
    dirty_.store(true, std::memory_order_relaxed);  // the next step looks again at once
    return true;
  }
  if (appended) ring_peers();
  pos_ += run_entry(e);
  log_.processed(pos_);
  dirty_.store(true, std::memory_order_relaxed);
  return true;
}

// ---- driving --------------------------------------------------------------

void AsyncLane::drive(const std::function<bool()>& stop, std::chrono::nanoseconds slice) {
  // The clock is read only every 16th idle poll: `until` and the end of the
  // spin are set at the first reading.
  Clock::time_point until = Clock::time_point::min(), spin_until = Clock::time_point::min();
  unsigned polls = 0;
  while (!stop()) {
    if (step()) {
      spin_until = Clock::time_point::min();  // spin again from the next reading
      continue;
    }
    if (!step_done_.empty() || !entry_done_.empty()) {
      step_done_.clear();  // finished operations are destroyed while nothing is new
      entry_done_.clear();
      continue;
    }
    if ((++polls & 15) != 0) {  // the clock and the locks only now and then
      cpu_relax();
      continue;
    }
    if (ended_.load(std::memory_order_acquire)) return;
    const auto now = Clock::now();
    if (until == Clock::time_point::min())
      until = slice.count() < 0 ? Clock::time_point::max() : now + slice;
    if (spin_until == Clock::time_point::min()) spin_until = now + kSpin;
    if (now >= until) return;
    // Shared memory has no progress thread: read the peer rings now and
    // then, so that frames for this rank (a peer's signature frame for an
    // operation it ran on the message path) arrive while it waits here.
    if ((polls & 63) == 0 && shm_->progress()) continue;
    if (now < spin_until) {
      if ((polls & 255) == 0) sched_yield();
      continue;
    }
    if (shm_->progress()) continue;
    Doorbell* bell = shm_->bell();
    uint32_t token = bell->prepare();
    if (!log_.news(pos_) && !dirty_.load() && !stop()) bell->sleep(token, kSleepMs);
    bell->done();
  }
}

bool AsyncLane::help(const std::shared_ptr<AsyncRequest>& req, bool any) {
  if (req->done()) return false;
  const uint64_t seen = completions_.load();
  want_.fetch_add(1);
  if (driver_mu_.try_lock()) {
    // (Driving on past the completions of other operations saves a return
    // and a re-entry per partition under kf_request_wait_all.)
    drive([&] { return req->done() || (any && completions_.load() != seen); }, kSlice);
    waiter_drives_.fetch_add(1);
    driver_mu_.unlock();
  } else {
    shm_->ring(me_);  // a driver asleep on the bell sees want_ and hands over
    std::unique_lock<std::mutex> lock(mu_);
    handoff_cv_.wait_for(lock, std::chrono::milliseconds(1));
  }
  want_.fetch_sub(1);
  return !req->done();
}

void AsyncLane::poll() {
  // (Inside a callback this thread may hold driver_mu_ already.)
  if (in_completion_callback() || !driver_mu_.try_lock()) return;
  step();
  driver_mu_.unlock();
}

void AsyncLane::thread_loop() {
  const auto cycle = std::chrono::microseconds(std::max<int64_t>(1, opts_.cycle_us));
  std::unique_lock<std::mutex> lock(mu_);
  int64_t idle_since = now_ns();
  bool waiters_drive = false;  // seen last time it looked
  auto wait = [&](ThreadWait why, Clock::time_point until) {
    thread_wait_ = why;
    if (until == Clock::time_point::max()) {
      thread_cv_.wait(lock);
    } else {
      thread_cv_.wait_until(lock, until);
    }
    thread_wait_ = ThreadWait::kNone;
  };
  while (!closed_) {
    const bool urgent_work = !replies_.empty() || !finished_.empty();
    if (ops_.empty() && unpublished_.empty() && !urgent_work) {
      // Nothing pending: a cycle's ticks for a while, then sleep until a
      // submission wakes the thread.
      urgent_ = false;
      waiters_drive = false;
      wait(ThreadWait::kIdle,
           now_ns() - idle_since > kLingerNs ? Clock::time_point::max() : Clock::now() + cycle);
      continue;
    }
    idle_since = now_ns();
    if (!urgent_work) {
      // The thread that waits for an operation usually drives: give it a
      // moment first (kGrace for large operations, a cycle for small ones,
      // kWaiterCycles while waiters drive).
      const auto t0 = Clock::now();
      while (!closed_ && replies_.empty() && finished_.empty()) {
        const auto end = t0 + (urgent_ ? kGrace : waiters_drive ? cycle * kWaiterCycles : cycle);
        if (Clock::now() >= end) break;
        wait(urgent_ ? ThreadWait::kGrace : ThreadWait::kCycle, end);
      }
      // A waiter driving, or one that just did and will be back (its slice
      // ended, or the next request of a kf_request_wait_any loop), keeps
      // driving.
      if (closed_) continue;
      const uint64_t drives = waiter_drives_.load();
      const bool waiter_drove = drives != thread_seen_drives_;
      thread_seen_drives_ = drives;
      if (want_.load() > 0 || waiter_drove) {
        urgent_ = false;
        waiters_drive = true;
        continue;
      }
    }
    urgent_ = false;
    waiters_drive = false;
    lock.unlock();
    const bool drove = driver_mu_.try_lock();
    if (drove) {
      drive(
          [this] {
            if (want_.load() > 0) return true;
            std::lock_guard<std::mutex> l(mu_);
            return closed_ ||
                   (ops_.empty() && unpublished_.empty() && replies_.empty() && finished_.empty());
          },
          std::chrono::nanoseconds(-1));
      driver_mu_.unlock();
    }
    lock.lock();
    handoff_cv_.notify_all();  // waiters may drive now
    // Another thread drives (it may be running a callback): with urgent
    // work, which skips the waits above, a cycle before looking again, not
    // a spin (that thread's step takes the work).
    if (!drove && !closed_ && (!replies_.empty() || !finished_.empty())) {
      wait(ThreadWait::kCycle, Clock::now() + cycle);
    }
  }
}

// ---- failure and shutdown -------------------------------------------------

LaneStats AsyncLane::stats() const {
  LaneStats s;
  s.fused_passes = fused_passes_.load(std::memory_order_relaxed);
  s.fused_ops = fused_ops_.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mu_);
  s.unmatched = matches_.size();
  return s;
}

void AsyncLane::on_broken(const Status& why) {
  Done done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (broken_.is_ok()) broken_ = why.is_ok() ? internal_error("lane broken") : why;
    ended_.store(true);
    unpublished_.clear();  // nothing is published any more
    std::vector<LaneOp*> ending;
    for (auto& kv : ops_) {
      if (!kv.second->running) ending.push_back(kv.second.get());  // a driver ends a running one
    }
    for (LaneOp* op : ending) {
      end_locked(op, Status(broken_.code(), op->label() + ": " + broken_.message()), &done);
    }
    // Completion callbacks must not run on a transport thread (this may be
    // one): the lane thread runs them.
    for (auto& d : done) finished_.push_back(std::move(d));
  }
  dirty_.store(true);
  thread_cv_.notify_one();
  handoff_cv_.notify_all();
}

size_t AsyncLane::pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ops_.size() + finished_.size();
}

void AsyncLane::close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_ && !thread_.joinable()) return;
  }
  on_broken(aborted_error("the communicator was destroyed with operations pending"));
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    ended_.store(true);
  }
  thread_cv_.notify_one();
  handoff_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  // Whatever the lane thread did not complete (it stops at closed_).
  Done done;
  {
    std::lock_guard<std::mutex> lock(mu_);
    done.swap(finished_);
    replies_.clear();
  }
  complete(done);
  {
    std::lock_guard<std::mutex> driver(driver_mu_);  // a driver still in help() has left
    step_done_.clear();
    entry_done_.clear();
  }
  std::lock_guard<std::mutex> lock(mu_);
  matches_.clear();
}

}  // namespace kf
