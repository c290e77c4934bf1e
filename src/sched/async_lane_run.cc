// AsyncLane, the log: what to append, and running its entries in order
// (see async_lane.h, 3. and 4.).
#include <algorithm>
#include <iterator>

#include "algo/shm_collectives.h"
#include "base/deadline.h"
#include "base/dtype.h"
#include "base/log.h"
#include "sched/async_lane.h"
#include "sched/async_lane_op.h"
#include "sched/async_texts.h"
#include "sched/op_arena.h"

namespace kf {

// ---- the log --------------------------------------------------------------

// Whether `op` may share a fused pass: one partition of more than a record's
// payload (tiny ones complete from the records), of at most a pass and a
// staging buffer (fuse_max_).
bool AsyncLane::fusable(const LaneOp& op) const {
  const uint64_t bytes = op.bytes();
  return op.parts == 1 && bytes > LaneRecord::kPayloadBytes && bytes <= fuse_max_;
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
      batch_[0].verb = LaneVerb::kWithdraw;
      return 1;
    }
    if (!op->warned && warn_ns > 0 && now - op->submit_ns >= warn_ns) {
      op->warned = true;
      KF_LOG_WARN(stall_text(op->label(), me_, (now - op->submit_ns) / 1000000,
                             missing_locked(op->name_hash, op->seq, op)));
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
  const LaneOp& head = *ready_.begin()->op;
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
      const LaneOp& op = *it->op;
      if (!fusable(op) || op.spec.dtype != head.spec.dtype || op.spec.op != head.spec.op) break;
      if (bytes + op.bytes() > limit) break;
      bytes += op.bytes();
      batch_[n++] = entry(op, LaneVerb::kFuse);
    }
  }
  batch_[0] = entry(head, n > 1            ? LaneVerb::kFuse
                          : head.tiny_late ? LaneVerb::kTiny
                                           : LaneVerb::kRun);
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
  emit(AsyncEvent::Type::kStart, op->spec.name, op->seq, part, op->parts, op->spec.priority, bytes,
       Status::ok());
  OpArena arena(shm_, 1, engine_, Deadline::after_ms(opts_.timeout_ms), &next_buffer_,
                opts_.single_copy);
  const char* send = static_cast<const char*>(op->spec.send);
  char* recv = static_cast<char*>(op->spec.recv);
  Status st = arena_all_reduce(arena, op->digest(count), count > 0 ? send + begin * es : send,
                               count > 0 ? recv + begin * es : recv, count, op->spec.dtype,
                               static_cast<kf_op_t>(op->spec.op), opts_.one_shot_bytes);
  emit(AsyncEvent::Type::kPartitionDone, op->spec.name, op->seq, part, op->parts, op->spec.priority,
       bytes, st);
  return st;
}

// The operations of fused_ in one pass (their signatures were checked
// through the records: the digest only guards the arena).
Status AsyncLane::run_fused_pass() {
  std::vector<ArenaPiece>& pieces = fused_pieces_;
  pieces.clear();
  uint32_t digest = 0;
  for (const LaneOp* op : fused_) {
    emit(AsyncEvent::Type::kStart, op->spec.name, op->seq, 0, 1, op->spec.priority, op->bytes(),
         Status::ok());
    pieces.push_back({op->spec.send, op->spec.recv, static_cast<size_t>(op->spec.count)});
    digest = digest * 0x01000193u ^ op->digest(op->spec.count);
  }
  const LaneOp& head = *fused_.front();
  OpArena arena(shm_, 1, engine_, Deadline::after_ms(opts_.timeout_ms), &next_buffer_,
                opts_.single_copy);
  Status st = arena_all_reduce_pieces(arena, digest, pieces.data(), pieces.size(), head.spec.dtype,
                                      static_cast<kf_op_t>(head.spec.op), opts_.one_shot_bytes);
  for (const LaneOp* op : fused_) {
    emit(AsyncEvent::Type::kPartitionDone, op->spec.name, op->seq, 0, 1, op->spec.priority,
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
      in_order = log_.entry(pos_ + i, &batch_[i]) && batch_[i].verb == LaneVerb::kFuse &&
                 batch_[i].reserved == n;
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
      if (in_order) fused_.push_back(op->get());
    }
    if (in_order) {
      for (LaneOp* op : fused_) op->running = true;  // on_broken() leaves them to us
    } else {
      fused_.clear();  // (not running: others may end them once the lock is released)
    }
  }
  Status st = in_order ? run_fused_pass()
                       : internal_error(
                             "the asynchronous shared-memory lane lost its order "
                             "(fused entry " +
                             std::to_string(pos_) + ")");
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (LaneOp* op : fused_) {
      op->running = false;
      if (!st.is_ok()) continue;
      op->done_parts = 1;
      end_locked(op,
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
  if (e.verb == LaneVerb::kFuse) {
    const uint64_t n = run_fused(e, &done);
    complete(done);
    return n;
  }
  if (e.verb == LaneVerb::kTiny) {
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
    if (e.verb == LaneVerb::kWithdraw) {
      if (op) {
        // Out of the table first, so that the records read next cannot
        // complete it; they tell who never submitted it.
        end_locked(op.get(), Status::ok(), &done);
        ingest_locked();
        const std::string missing = missing_locked(e.name_hash, e.seq, op.get());
        op->result = timeout_error(
            timed_out_text(op->label(), opts_.timeout_ms,
                           missing.empty() ? gave_up_text() : never_submitted_text(missing)));
      } else {
        // (The key leaves the table early if this rank submits it.)
        if (withdrawn_.insert({e.name_hash, e.seq}).second) {
          keep_latest(&withdrawn_, &withdrawn_order_, OpKey{e.name_hash, e.seq}, kLaneForgotten);
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
  if (e.verb == LaneVerb::kRun) {
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
    // (Records published now may complete tiny operations: first.)
    if (broken_.is_ok()) flush_unpublished_locked();
    take_finished_locked(&done);
    replies.swap(replies_);
    if (broken_.is_ok()) {
      // The log first: a withdrawal already there must be seen before the
      // records that would complete a tiny operation it ends (run_entry()
      // reads the records a run entry needs). (This rank's own records,
      // published above, cannot complete one a withdrawal ends: the
      // withdrawer's deadline, in its record, has passed, so
      // in_time_locked() leaves the operation to the log's verdict.)
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

}  // namespace kf
