// AsyncLane: construction, submission, matching records (see async_lane.h,
// 1. and 2.), tiny operations completed from their records, and the
// bookkeeping of operations that end early (forgotten, failed by a peer's
// signature frame). The log is in async_lane_run.cc, driving in
// async_lane_drive.cc.
#include "sched/async_lane.h"

#include <algorithm>
#include <cstring>

#include "algo/reduce_kernels.h"
#include "algo/strategy.h"
#include "base/deadline.h"
#include "base/dtype.h"
#include "base/log.h"
#include "sched/async_lane_op.h"
#include "sched/async_signature.h"
#include "sched/async_texts.h"
#include "sched/op_kind.h"

namespace kf {
namespace {

// A tiny operation whose records are all in completes on the spot only this
// long before its deadline: more than a tick of the coarse clock the stamps
// and the check use (1-10 ms), so that a withdrawal, which comes after the
// deadline, is never appended for it (see in_time_locked()).
constexpr int64_t kTinyMarginMs = 50;

}  // namespace

AsyncLane::AsyncLane(Engine* engine, ShmTransport* shm, const LaneOptions& opts,
                     const std::atomic<bool>* observed, Emit emit, Reply reply)
    : engine_(engine),
      shm_(shm),
      opts_(opts),
      observed_(observed),
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
      n_(shm->local_size()),
      fuse_max_(std::min<uint64_t>(opts.pass_bytes, shm->staging_bytes())),
      cycle_(std::max<int64_t>(1, opts.cycle_us)),
      look_(cycle_ * kLaneWaiterCycles) {
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

void AsyncLane::take_in(AsyncOpSpec&& spec, uint64_t name_hash, uint64_t seq,
                        uint64_t partition_bytes, const std::vector<int>& foreign,
                        const std::shared_ptr<AsyncRequest>& req, Intake* intake) {
  auto op = std::allocate_shared<LaneOp>(PoolAllocator<LaneOp>(&op_pool_), std::move(spec));
  LaneOp* const o = op.get();
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
  emit(AsyncEvent::Type::kSubmit, op->spec.name, seq, 0, op->parts, op->spec.priority, bytes,
       Status::ok());

  Done& done = intake->done;
  bool& deferred = intake->deferred;
  intake->foreign = !foreign.empty();
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
    } else if (!withdrawn_.empty() && withdrawn_.erase(op->key()) > 0) {
      op->result = timeout_error(timed_out_text(op->label(), opts_.timeout_ms, gave_up_text()));
      done.push_back(op);  // (forgotten when the withdrawal was read)
    } else if (!insert_locked(&op)) {
      // Two names with one 64-bit hash, at the same sequence number.
      op->result = internal_error(op->label() +
                                  ": its name's hash collides with that of another "
                                  "pending operation; rename one of them");
      done.push_back(op);
    } else {
      LaneRecord rec = record_of(*o);  // (`op` went into ops_)
      if (bytes > 0 && bytes <= LaneRecord::kPayloadBytes) {
        std::memcpy(rec.payload, o->spec.send, bytes);  // a tiny operation travels in its record
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
      // A burst starts: the lane thread counts the waiters' drives from
      // here (see thread_loop()), not from its last look before an idle
      // spell.
      if (ops_.size() == 1) drives_seen_ = waiter_drives_.load(std::memory_order_relaxed);
      if (!finished_.empty()) take_finished_locked(&done);  // a tiny operation, all records in
      // The lane thread's time: a system call only when this sets an
      // earlier one (the first submission after an idle spell, usually).
      if (pending_locked() && (alarm_ == Clock::time_point::max() || !waiters_lead_)) {
        alarm_locked(Clock::now() + grace_for(bytes));
      }
    }
    // Inside a completion callback, what completes here goes to the lane
    // thread instead (async.h): a callback that submits again must not nest
    // the next callback on its stack. (Asked only when something completes
    // here: a thread-local read in a shared library costs a call.)
    if (!done.empty() && !closed_ && in_completion_callback()) {
      for (auto& d : done) finished_.push_back(std::move(d));
      done.clear();
      deferred = true;
    }
    // (Relaxed, under the lock: a plain store, published by the unlock.
    // A driver that misses it takes mu_ at its next look. A driver of this
    // rank asleep on the bell is rung only when completions were deferred
    // to it (after_take_in()): Doorbell::ring()'s fence orders this store
    // before that ring.)
    dirty_.store(true, std::memory_order_relaxed);
  }
}

void AsyncLane::after_take_in(Intake* intake) {
  if (intake->deferred) shm_->ring(me_);      // a driver asleep on the bell takes them
  if (intake->foreign) thread_timer_.ring();  // the lane thread sends the replies
  complete(intake->done);
  if (intake->foreign) return;
  ring_peers();
  if (intake->deferred) thread_timer_.ring();  // or the lane thread
}

// Moves *op into ops_, counted as unready. False (*op left as it is) if an
// operation with its key is pending already.
bool AsyncLane::insert_locked(std::shared_ptr<LaneOp>* op) {
  auto slot = ops_.claim((*op)->key());
  if (!slot.second) return false;
  slot.first->second = std::move(*op);
  ++unready_;
  return true;
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
      thread_timer_.ring();
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
  thread_timer_.ring();
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
  take_finished_locked(done);
}

void AsyncLane::take_finished_locked(Done* done) {
  if (done->empty()) {
    done->swap(finished_);  // (no copy, and the buffers are reused)
  } else {
    done->insert(done->end(), finished_.begin(), finished_.end());
    finished_.clear();
  }
  left_.store(false, std::memory_order_relaxed);
}

void AsyncLane::match_record_locked(int local, const LaneRecord& r) {
  const OpKey key{r.name_hash, r.seq};
  if (!forgotten_.empty() && forgotten_.count(key) > 0) return;  // it failed here already
  // Submitted here, and matched in the operation itself (see async_lane.h, 2.).
  auto it = ops_.find(key);
  if (it != ops_.end() && in_op(*it->second)) {
    LaneOp* op = it->second.get();
    if (local == me_) {
      // Its own record is published: the records that came before it join
      // it. (The table is looked at only when it holds something.)
      auto mit = matches_.empty() ? matches_.end() : matches_.find(key);
      if (mit != matches_.end()) {
        for (int j = 0; j < n_; ++j) {
          if (mit->second.have[static_cast<size_t>(j)]) {
            match_in_op_locked(op, j, mit->second.rec[static_cast<size_t>(j)]);
          }
        }
        erase_match_locked(mit);
      }
    }
    match_in_op_locked(op, local, r);
    // (Every local rank's bit: n_ <= 64 here. A mask, not a population
    // count: without -mpopcnt that is a call into libgcc.)
    if (op->seen == (n_ == 64 ? ~uint64_t{0} : (uint64_t{1} << n_) - 1)) check_ready_locked(op);
    return;
  }
  Match& m = matches_.claim(key).first->second;
  if (m.have.empty()) {  // a fresh slot's (a finished match's comes back sized and reset)
    m.rec.resize(static_cast<size_t>(n_));
    m.have.assign(static_cast<size_t>(n_), 0);
    m.count = 0;
  }
  if (!m.have[static_cast<size_t>(local)]) {
    m.have[static_cast<size_t>(local)] = 1;
    // (Without the payload's line unless in use: a record is copied twice
    // per operation.)
    copy_record(&m.rec[static_cast<size_t>(local)], r);
    ++m.count;
  }
  if (m.count < n_) return;
  if (it != ops_.end()) check_ready_locked(it->second.get());  // (the table did not move)
}

bool AsyncLane::in_op(const LaneOp& op) const {
  const uint64_t bytes = op.bytes();
  return n_ <= 64 && (bytes == 0 || bytes > LaneRecord::kPayloadBytes);
}

namespace {
// Whether two ranks' records of an operation agree on what every rank must.
bool same_signature(const LaneRecord& a, const LaneRecord& b) {
  return a.count == b.count && a.partition_elems == b.partition_elems && a.kind == b.kind &&
         a.dtype == b.dtype && a.op == b.op && a.root == b.root && a.strategy == b.strategy;
}

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

// Rank `local`'s record of `op`, once: its signature against this rank's
// (own record: nothing to compare).
void AsyncLane::match_in_op_locked(LaneOp* op, int local, const LaneRecord& r) {
  const uint64_t bit = uint64_t{1} << local;
  if (op->seen & bit) return;
  op->seen |= bit;
  if (local == me_ || (op->differs_rank >= 0 && op->differs_rank < local)) return;
  const LaneRecord mine = record_of(*op);
  if (same_signature(r, mine)) return;
  // (The lowest rank that differs is named, as with the records in a table.)
  op->differs_rank = local;
  op->differs = sig_difference(sig_of(mine, op->spec.name), me_, sig_of(r, op->spec.name), local);
}

// Every rank's record is in: a mismatch every rank sees alike, or ready. A
// tiny operation (its data in the records) completes here and now: every
// rank reduces the same records in rank order, so no log entry is needed.
void AsyncLane::check_ready_locked(LaneOp* op) {
  if (in_op(*op)) {
    if (!op->differs.empty()) {
      end_locked(op,
                 invalid_usage(op->label() + ": ranks called it with different arguments: " +
                               op->differs),
                 &finished_);
      left_.store(true, std::memory_order_relaxed);
      return;
    }
    op->ready = true;
    --unready_;
    ready_.insert(op->spec.priority, op->order, op);
    return;
  }
  auto mit = matches_.find(op->key());
  Match& m = mit->second;
  const LaneRecord& mine = m.rec[static_cast<size_t>(me_)];
  std::string diff;
  for (int j = 0; j < n_ && diff.empty(); ++j) {
    const LaneRecord& r = m.rec[static_cast<size_t>(j)];
    if (j == me_ || same_signature(r, mine)) continue;
    diff = sig_difference(sig_of(mine, op->spec.name), me_, sig_of(r, op->spec.name), j);
  }
  if (!diff.empty()) {
    erase_match_locked(mit);
    end_locked(op,
               invalid_usage(op->label() + ": ranks called it with different arguments: " + diff),
               &finished_);
    left_.store(true, std::memory_order_relaxed);
    return;
  }
  const uint64_t bytes = op->bytes();
  const bool tiny = bytes > 0 && bytes <= LaneRecord::kPayloadBytes;
  if (tiny && in_time_locked(m)) {
    reduce_tiny_locked(op, mit, &finished_);  // completes it
    left_.store(true, std::memory_order_relaxed);
    return;
  }
  // A tiny operation too close to its deadline keeps its records for the
  // log's verdict (LaneVerb::kTiny, or a withdrawal appended first).
  if (tiny) {
    op->tiny_late = true;
  } else {
    erase_match_locked(mit);
  }
  op->ready = true;
  --unready_;
  ready_.insert(op->spec.priority, op->order, op);
}

// Whether a tiny operation whose records are all in (`m`) may complete here
// and now, without the log: if it is more than kTinyMarginMs before the
// earliest of the deadlines in the records (the same figure on every rank,
// whatever each rank's KF_TIMEOUT_MS). A rank withdraws an operation only
// after its own deadline, which is no earlier, and reads the rings once
// more before it does: every record was published by then, so it finds the
// operation ready and withdraws nothing. Past that point ranks ask the log
// (LaneVerb::kTiny): a withdrawal or the completion, whichever comes first, holds for
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

// The log's verdict on a tiny operation (LaneVerb::kTiny): complete it from its
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

// A finished match leaves its record storage, reset, for the next.
void AsyncLane::erase_match_locked(MatchMap::iterator it) {
  Match& m = it->second;
  std::fill(m.have.begin(), m.have.end(), 0);
  m.count = 0;
  matches_.erase(it);
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
  if (forgotten_.insert(key).second)
    keep_latest(&forgotten_, &forgotten_order_, key, kLaneForgotten);
  // Nor do the frames a peer sent of it on the message path (a kind
  // mismatch) stay in the store of early messages.
  engine_->mailbox().forget(key.first, key.second, AsyncEngine::kPartitionBits);
}

// Keeps `op` (failed by a peer's signature frame) to answer later frames.
void AsyncLane::foreign_failed_locked(const std::shared_ptr<LaneOp>& op) {
  if (foreign_failed_.emplace(op->key(), op).second) {
    keep_latest(&foreign_failed_, &foreign_order_, op->key(), kLaneForgotten);
  }
}

// Ranks (local indices, which are the ranks: every rank is local) whose
// record of the operation has not been read.
std::string AsyncLane::missing_locked(uint64_t name_hash, uint64_t seq, const LaneOp* op) const {
  const Match* m = matches_.get({name_hash, seq});
  if (op == nullptr) {
    const std::shared_ptr<LaneOp>* o = ops_.get({name_hash, seq});
    if (o != nullptr) op = o->get();
  }
  const uint64_t seen = op != nullptr && in_op(*op) ? op->seen : 0;
  std::string out;
  for (int j = 0; j < n_; ++j) {
    // (This rank submitted it: its record may still wait to be published.)
    if (j == me_ || (m != nullptr && m->have[static_cast<size_t>(j)]) ||
        (j < 64 && (seen >> j) & 1)) {
      continue;
    }
    out += (out.empty() ? "" : ", ") + std::to_string(j);
  }
  return out;
}

// Ends `op` with `st` (success too): out of the tables, onto `done`.
void AsyncLane::end_locked(LaneOp* op, const Status& st, Done* done) {
  auto it = ops_.find(op->key());
  if (it == ops_.end()) return;
  op->result = st;
  if (op->stale) --stale_left_;
  if (op->ready) {
    ready_.erase(op->spec.priority, op->order);
  } else {
    --unready_;
  }
  done->push_back(std::move(it->second));
  ops_.erase(it);
}

void AsyncLane::complete(const Done& done) {
  for (const auto& op : done) {
    emit(AsyncEvent::Type::kFinish, op->spec.name, op->seq, 0, op->parts, op->spec.priority,
         op->bytes(), op->result);
    run_completion_callback(op->spec, op->result);
    op->req->finish(op->result);
  }
  if (!done.empty()) completions_.fetch_add(done.size());
}

}  // namespace kf
