// AsyncEngine: submission, the priority queue and credit window, control
// frames, and the elastic worker pool. Completion, signature checks and the
// stall inspector are in async_finish.cc.
#include "sched/async_engine.h"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <new>

#include "base/config.h"
#include "base/deadline.h"
#include "base/dtype.h"
#include "base/log.h"
#include "sched/any_completion.h"
#include "sched/async_lane.h"
#include "sched/async_state.h"
#include "sched/async_texts.h"
#include "sched/op_kind.h"
#include "transport/bundle.h"
#include "transport/frame.h"

namespace kf {
namespace {

uint64_t knob_bytes(Knob k, uint64_t fallback) {
  int64_t v = knob_int(k);
  return v > 0 ? static_cast<uint64_t>(v) : fallback;
}

// The wire sequence of the signature frame: the partition field all ones.
constexpr uint64_t kSigPartition = AsyncEngine::kPartitionMask;
// The engine's control steps share the range with the transport's bundles.
static_assert(AsyncEngine::kSigStep >= kControlStepFirst && AsyncEngine::kSigStep != kBundleStep &&
                  AsyncEngine::kStartStep != kBundleStep && AsyncEngine::kGaveUpStep != kBundleStep,
              "control steps must differ");
// Whether this thread is inside an operation completed at its submission
// (on one rank, or a fused one whose peers' data was all in at its
// submission): a completion callback that submits again goes to the
// workers, so that a chain of such callbacks never nests on one stack.
thread_local bool t_completing_inline = false;
struct InlineCompletion {  // marks the thread for the scope, if `on`
  explicit InlineCompletion(bool mark) : on(mark) { t_completing_inline |= mark; }
  ~InlineCompletion() {
    if (on) t_completing_inline = false;
  }
  const bool on;
};

}  // namespace

// ---- AsyncRequest ---------------------------------------------------------

bool AsyncRequest::done() const {
  return done_.load(std::memory_order_acquire);
}

Status AsyncRequest::status() const {
  if (done()) return status_;  // written once, before done_ was released
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

void AsyncRequest::wait(const std::function<bool()>& help) {
  while (!done() && help && help()) {
  }
  if (done()) return;
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return done_.load(std::memory_order_relaxed); });
}

void AsyncRequest::flush_held() {
  std::weak_ptr<Fuser> held;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (held_.expired()) return;
    held.swap(held_);
  }
  // Null once the communicator closed its fuser (which sent everything).
  if (std::shared_ptr<Fuser> f = held.lock()) f->flush();
}

void AsyncRequest::finish(const Status& st) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    status_ = st;
    done_.store(true, std::memory_order_release);  // after status_: done() needs no lock
    cv_.notify_all();
  }
  AnyCompletion::signal();
}

// ---- completion callbacks -------------------------------------------------

namespace {
thread_local int t_callback_depth = 0;  // a callback may submit, and so nest one
}  // namespace

void run_completion_callback(const AsyncOpSpec& spec, const Status& st) {
  if (!spec.on_complete) return;
  struct Depth {  // restored on an exception too
    Depth() { ++t_callback_depth; }
    ~Depth() { --t_callback_depth; }
  } depth;
  spec.on_complete(st);
}

bool in_completion_callback() {
  return t_callback_depth > 0;
}

// ---- construction ---------------------------------------------------------

AsyncEngine::AsyncEngine(Engine* engine, const AlgoOptions& algo, int64_t timeout_ms)
    : engine_(engine),
      algo_(algo),
      timeout_ms_(timeout_ms),
      stall_warn_ms_(knob_int(Knob::KF_STALL_WARN_MS)),
      rank_(engine->rank()),
      size_(engine->size()),
      partition_bytes_(knob_bytes(Knob::KF_PARTITION_BYTES, 4 << 20)),
      credit_bytes_(knob_bytes(Knob::KF_CREDIT_BYTES, 1 << 20)),
      fusion_threshold_(
          static_cast<uint64_t>(std::max<int64_t>(0, knob_int(Knob::KF_FUSION_THRESHOLD_BYTES)))) {
  if (fusion_threshold_ > 0 && size_ > 1) {
    FusionOptions fo;
    fo.max_bytes = knob_bytes(Knob::KF_FUSION_BUNDLE_BYTES, fo.max_bytes);
    fo.cycle_us = std::max<int64_t>(0, knob_int(Knob::KF_FUSION_CYCLE_US));
    fo.undriven = [this] { return fused_waiting_ops_.load() > 0 && helping_.load() == 0; };
    fuser_.reset(new Fuser(engine, fo));
  }
}

AsyncEngine::~AsyncEngine() { close(); }

void AsyncEngine::close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return;
  }
  if (fuser_) fuser_->flush();
  drain(0);
  bool busy;
  {
    std::lock_guard<std::mutex> lock(mu_);
    busy = !pending_.empty() || (lane_ && lane_->pending() > 0);
  }
  // Operations still running would wait for their timeouts: end them now.
  if (busy) engine_->abort(aborted_error("the communicator was destroyed with operations pending"));
  drain(timeout_ms_ < 0 ? 10000 : timeout_ms_);
  std::vector<std::thread> workers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    workers.swap(workers_);
  }
  work_cv_.notify_all();
  inspect_cv_.notify_all();
  completer_cv_.notify_all();
  for (auto& t : workers) t.join();
  if (lane_) lane_->close();
  if (inspector_.joinable()) inspector_.join();
  if (completer_.joinable()) completer_.join();
  if (fuser_) fuser_->close();  // waits for its bundles in flight (a request may still hold it)
  fuser_.reset();
  // What the abort and the drain did not end (a partition stuck past the
  // drain's limit) ends here, so that no request outlives the engine in
  // progress: a wait on it later must not reach the freed engine.
  std::vector<std::shared_ptr<AsyncOp>> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& kv : pending_) {
      kv.second->req->op_ = nullptr;
      left.push_back(kv.second);
    }
    pending_.clear();
  }
  for (auto& o : left) {
    const Status st =
        aborted_error(o->label() + ": the communicator was destroyed with the operation pending");
    emit(AsyncEvent::Type::kFinish, *o, 0, o->total_bytes, st);
    run_completion_callback(o->spec, st);
    o->req->finish(st);
  }
}

void AsyncEngine::enable_lane(ShmTransport* shm, bool single_copy, size_t one_shot_bytes) {
  LaneOptions lo;
  lo.timeout_ms = timeout_ms_;
  lo.stall_warn_ms = stall_warn_ms_;
  lo.single_copy = single_copy;
  lo.one_shot_bytes = one_shot_bytes;
  if (fusion_threshold_ > 0) {
    lo.wake_bytes = fusion_threshold_;
    lo.pass_bytes = std::max<int64_t>(0, knob_int(Knob::KF_FUSION_PASS_BYTES));
  }
  lo.cycle_us = std::max<int64_t>(1, knob_int(Knob::KF_FUSION_CYCLE_US));
  lane_.reset(new AsyncLane(
      engine_, shm, lo,
      [this](AsyncEvent::Type type, const std::string& name, uint64_t seq, uint32_t partition,
             uint32_t partitions, int32_t priority, uint64_t bytes, const Status& st) {
        emit_event(type, name, seq, partition, partitions, priority, bytes, st);
      },
      [this](int peer, const AsyncOpSpec& spec, uint64_t name_hash, uint64_t seq) {
        send_signature(peer, spec, name_hash, seq);
      }));
}

// A peer ran (name_hash, seq) on the message path while this rank runs it on
// the lane: it waits for our signature frame, which shows it the mismatch.
void AsyncEngine::send_signature(int peer, const AsyncOpSpec& spec, uint64_t name_hash,
                                 uint64_t seq) {
  SigRecord sig;
  sig.kind = spec.kind;
  sig.count = spec.count;
  sig.dtype = static_cast<int32_t>(spec.dtype);
  sig.op = spec.op;
  sig.root = spec.root;
  // The partition size the message path would have used, so that the peer's
  // comparison names the real difference (kind or strategy).
  uint64_t pbytes = spec.partition_bytes > 0 ? spec.partition_bytes : partition_bytes_.load();
  sig.partition_elems =
      plan_partitions(spec.kind, spec.count, dtype_size(spec.dtype), size_, pbytes).elems;
  sig.strategy = spec.strategy;
  sig.name = spec.name;
  std::unique_ptr<char[]> buf(new char[kSigRecordBytes]);
  encode_sig(sig, buf.get());
  std::unique_ptr<OpPeers> peers(new OpPeers(engine_, spec.name, name_hash,
                                             (seq << kPartitionBits) | kSigPartition, 0,
                                             Deadline::after_ms(timeout_ms_)));
  TransferHandle sent = peers->isend(peer, Tag{0, kSigStep}, buf.get(), kSigRecordBytes);
  // Replies that are out need keeping no longer (one per mismatch: a long
  // run must not keep them all); destroyed after the lock is released.
  std::vector<LaneReply> out;
  std::lock_guard<std::mutex> lock(mu_);
  auto sending = std::partition(lane_replies_.begin(), lane_replies_.end(),
                                [](const LaneReply& r) { return r.sent && !r.sent->done(); });
  std::move(sending, lane_replies_.end(), std::back_inserter(out));
  lane_replies_.erase(sending, lane_replies_.end());
  lane_replies_.push_back(LaneReply{std::move(peers), std::move(buf), std::move(sent)});
}

Fuser::Stats AsyncEngine::fusion_stats() const {
  return fuser_ ? fuser_->stats() : Fuser::Stats{};
}

LaneStats AsyncEngine::lane_stats() const {
  return lane_ ? lane_->stats() : LaneStats{};
}

void AsyncEngine::set_partition_bytes(uint64_t bytes) {
  partition_bytes_.store(bytes > 0 ? bytes : knob_bytes(Knob::KF_PARTITION_BYTES, 4 << 20));
}

void AsyncEngine::set_credit_bytes(uint64_t bytes) {
  credit_bytes_.store(bytes > 0 ? bytes : knob_bytes(Knob::KF_CREDIT_BYTES, 1 << 20));
  admit_and_start(false);
}

uint64_t AsyncEngine::partition_bytes() const { return partition_bytes_.load(); }
uint64_t AsyncEngine::credit_bytes() const { return credit_bytes_.load(); }

void AsyncEngine::set_observer(AsyncObserver obs) {
  std::lock_guard<std::mutex> lock(obs_mu_);
  observer_ = std::move(obs);
  has_observer_.store(static_cast<bool>(observer_));
}

void AsyncEngine::emit(AsyncEvent::Type type, const AsyncOp& op, uint32_t partition,
                       uint64_t bytes, const Status& st) {
  emit_event(type, op.spec.name, op.seq, partition, op.plan.count, op.spec.priority, bytes, st);
}

void AsyncEngine::emit_event(AsyncEvent::Type type, const std::string& name, uint64_t seq,
                             uint32_t partition, uint32_t partitions, int32_t priority,
                             uint64_t bytes, const Status& st) {
  if (!has_observer_.load(std::memory_order_relaxed)) return;
  const int code = static_cast<int>(st.code());
  AsyncEvent e{type, &name, seq, partition, partitions, priority, bytes, now_ns(), code};
  std::lock_guard<std::mutex> lock(obs_mu_);
  if (observer_) observer_(e);
}

// ---- submission -----------------------------------------------------------

Status AsyncEngine::submit(AsyncOpSpec spec, std::shared_ptr<AsyncRequest>* out) {
  // The lane checks its own health (on_broken() reaches it).
  if (lane_ && AsyncLane::accepts(spec)) return submit_to_lane(std::move(spec), out);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return aborted_error("the communicator is being destroyed: cannot run '" + spec.name + "'");
  }
  KF_RETURN_IF_ERROR(engine_->refuse(spec.name));
  auto op = std::make_shared<AsyncOp>();
  AsyncOp* o = op.get();
  const size_t es = dtype_size(spec.dtype);
  uint64_t pbytes = spec.partition_bytes > 0 ? spec.partition_bytes : partition_bytes_.load();
  o->plan = plan_partitions(spec.kind, spec.count, es, size_, pbytes);
  o->fused = fusible(spec, o->plan, spec.count * es);
  o->name_hash = hash_name(spec.name.data(), spec.name.size());
  o->sig.kind = spec.kind;
  o->sig.count = spec.count;
  o->sig.dtype = spec.kind == kBarrier ? -1 : static_cast<int32_t>(spec.dtype);
  o->sig.op = spec.op;
  o->sig.root = spec.root;
  o->sig.partition_elems = o->plan.elems;
  o->sig.strategy = spec.strategy;
  o->sig.fused = o->fused;
  o->sig.name = spec.name;
  OpSignature os;
  os.kind = spec.kind;
  os.count = spec.count;
  os.dtype = o->sig.dtype;
  os.op = spec.op;
  os.root = spec.root;
  o->digest = os.digest() ^ static_cast<uint32_t>(o->plan.elems * 0x9e3779b1u) ^
              (o->fused ? 0x5bd1e995u : 0u);
  o->parts.resize(o->plan.count);
  for (uint32_t i = 0; i < o->plan.count; ++i) {
    o->parts[i].op = o;
    o->parts[i].index = i;
    o->parts[i].bytes = partition_bytes_of(o->plan, spec, es, size_, i);
    o->total_bytes += o->parts[i].bytes;
  }
  o->spec = std::move(spec);
  o->req = *out ? *out : std::make_shared<AsyncRequest>();
  o->sig_in.resize(static_cast<size_t>(size_));
  o->sig_recv.resize(static_cast<size_t>(size_));
  o->sig_send.resize(static_cast<size_t>(size_));
  o->checked.assign(static_cast<size_t>(size_), 0);
  o->submit_ns = now_ns();
  o->deadline = Deadline::after_ms(timeout_ms_);

  // 1. Take the sequence number; control frames for it are remembered
  //    until the operation is ready.
  {
    std::lock_guard<std::mutex> lock(mu_);
    o->seq = next_seq_[o->name_hash]++;
    o->order = next_order_++;
    o->unfinished = o->plan.count + 1;  // +1: this submission
    pending_[{o->name_hash, o->seq}] = op;
    o->req->op_ = o;
    if (size_ > 1) start_inspector_locked();
  }
  emit(AsyncEvent::Type::kSubmit, *o, 0, o->total_bytes, Status::ok());

  // 2. Post the receives of every peer's signature frame.
  const uint64_t sig_wire = (o->seq << kPartitionBits) | kSigPartition;
  if (size_ > 1) {
    o->ctl_recv.reset(new OpPeers(engine_, o->spec.name, o->name_hash, sig_wire, 0, o->deadline));
    o->ctl_recv->set_display(o->seq, " (signature)");
    if (o->fused) {
      // A peer that submitted something else under this name and sequence
      // never sends our data: its signature frame ends the wait instead.
      std::weak_ptr<AsyncOp> w = op;
      o->ctl_recv->set_recv_listener([this, w] { fused_event(w, false); });
    }
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      o->sig_in[r].resize(kSigRecordBytes);
      TransferHandle t =
          o->ctl_recv->irecv(r, Tag{0, kSigStep}, o->sig_in[r].data(), kSigRecordBytes);
      // check_signatures() may already run on a transport thread (fused).
      std::lock_guard<std::mutex> op_lock(o->mu);
      o->sig_recv[r] = std::move(t);
    }
  }

  // 3. Queue the partitions; start those that peers started, a small
  //    operation at once (eager), and what the credit allows.
  std::vector<AsyncPartition*> starts;
  uint32_t prefix = 0;
  bool gave_up = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    o->ready = true;
    if (size_ > 1) start_inspector_locked();  // it skipped this op while it was not ready
    o->queued = o->plan.count;
    if (o->fused) {
      o->parts[0].state = AsyncPartition::State::kRunnable;  // started below, never queued
      o->queued = 0;
    }
    o->seen.assign(static_cast<size_t>(size_), 0);
    auto rem = remembered_.find({o->name_hash, o->seq});
    if (rem != remembered_.end()) {
      for (uint32_t i = 0; i < rem->second.prefix && i < o->plan.count; ++i) force_locked(o, i);
      for (uint32_t i : rem->second.parts) {
        if (i < o->plan.count) force_locked(o, i);
      }
      for (int src : rem->second.submitted_by) saw_signature_locked(o, src);
      gave_up = rem->second.gave_up;
      remembered_.erase(rem);
    }
    if (gave_up) {
      // A peer timed it out already: it can never complete. (A fused one
      // still posts its receives, which take in the data the peers sent,
      // and sends its own: the peers still running it fail it by the same
      // peer's frame.)
      o->gave_up = true;
      o->set_error(timeout_error(timed_out_text(o->label(), timeout_ms_, gave_up_text())));
      drop_queued_locked(o);
    }
    if (!gave_up && !o->fused && o->queued == 1 && o->plan.count == 1 &&
        o->total_bytes <= kEagerBytes && eager_running_ < kMaxEager) {
      AsyncPartition* p = &o->parts[0];
      p->state = AsyncPartition::State::kRunnable;
      p->eager = true;
      ++eager_running_;
      o->queued = 0;
      starts.push_back(p);
    }
    if (size_ == 1 || o->sigs_seen + 1 == static_cast<uint32_t>(size_)) confirm_locked(o);
    Status broken = engine_->health();  // a break before ready: on_broken missed this op
    if (!broken.is_ok()) {
      o->set_error(Status(broken.code(), o->label() + ": " + broken.message()));
      drop_queued_locked(o);
      engine_->cause_reported();  // the request reports it
    }
    admit_locked(&starts);
    // (Dropped ones, of an operation failed already, are not started: a
    // peer told they were would start them all.)
    while (!o->fused && prefix < o->plan.count &&
           (o->parts[prefix].state == AsyncPartition::State::kRunnable ||
            o->parts[prefix].state == AsyncPartition::State::kRunning)) {
      ++prefix;
    }
  }

  // 4. Tell every peer: the signature, and the partitions started so far.
  if (size_ > 1) {
    o->sig_out.resize(kSigRecordBytes);
    encode_sig(o->sig, o->sig_out.data());
    o->ctl_send.reset(new OpPeers(engine_, o->spec.name, o->name_hash, sig_wire, prefix, o->deadline));
    if (o->fused) o->ctl_send->set_fuser(fuser_.get());
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      o->sig_send[r] = o->ctl_send->isend(r, Tag{0, kSigStep}, o->sig_out.data(), kSigRecordBytes);
    }
  }
  // A fused operation whose peers' data is all in (this rank submitted it
  // last), and on one rank a small operation (a copy), complete here, on the
  // submitting thread: a hand-off to another thread would cost more (two
  // wake-ups) than the work.
  const bool fused_here = o->fused && start_fused(o, op, !t_completing_inline);
  announce(starts, o, prefix);
  const bool alone = size_ == 1 && !t_completing_inline && starts.size() == 1 &&
                     starts.front()->op == o && starts.front()->eager;
  const bool here = alone || fused_here;
  InlineCompletion inline_scope(here);
  AsyncPartition* mine = dispatch_starts(&starts, alone);  // (never both: one rank fuses nothing)
  if (fused_here) mine = &o->parts[0];
  if (mine != nullptr) {
    AsyncPartition* next = run_partition_task(mine);
    if (next != nullptr) hand_off(next);  // another operation's: a worker runs it
  }

  *out = o->req;
  if (fused_here) {
    // Its frames are still held (run_fused): waiting for or testing the
    // request sends them, else the fuser's cycle does.
    std::lock_guard<std::mutex> lock(o->req->mu_);
    o->req->held_ = fuser_;
  }
  // 5. Release the submission's hold on completion.
  bool finalize_here = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (--o->unfinished == 0) {
      o->finalize_task.op = o;
      o->finalize_task.index = kFinalizeTask;
      // Completed here: this thread finalizes it below (it never waits: a
      // fused operation's data comes after its signature frame); else a
      // worker or waiter does.
      finalize_here = here;
      o->finalize_task.state =
          here ? AsyncPartition::State::kRunning : AsyncPartition::State::kRunnable;
      if (!here) dispatch_locked(&o->finalize_task);
    }
  }
  if (finalize_here) finalize(o);  // `op` keeps it alive
  return Status::ok();
}

Status AsyncEngine::submit_to_lane(AsyncOpSpec spec, std::shared_ptr<AsyncRequest>* out) {
  const uint64_t name_hash = hash_name(spec.name.data(), spec.name.size());
  std::shared_ptr<AsyncRequest> req = *out ? *out : std::make_shared<AsyncRequest>();
  req->lane_ = true;
  uint64_t seq;
  std::vector<int> foreign;  // ranks that sent a signature frame: another kind
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) {
      return aborted_error("the communicator is being destroyed: cannot run '" + spec.name + "'");
    }
    seq = next_seq_[name_hash]++;
    auto rem = remembered_.find({name_hash, seq});
    if (rem != remembered_.end()) {
      foreign.assign(rem->second.submitted_by.begin(), rem->second.submitted_by.end());
      remembered_.erase(rem);
    }
    lane_entering_.push_back({name_hash, seq});
  }
  lane_->submit(std::move(spec), name_hash, seq, partition_bytes_.load(), foreign, req);
  {
    // Signature frames that came while the lane took the operation in.
    std::lock_guard<std::mutex> lock(mu_);
    const OpKey key{name_hash, seq};
    auto e = std::find(lane_entering_.begin(), lane_entering_.end(), key);
    *e = lane_entering_.back();
    lane_entering_.pop_back();
    auto rem = remembered_.find(key);
    if (rem != remembered_.end()) {
      for (int src : rem->second.submitted_by) lane_->on_foreign_signature(src, name_hash, seq);
      remembered_.erase(rem);
    }
  }
  *out = std::move(req);
  return Status::ok();
}

// ---- scheduling -----------------------------------------------------------

// Starts queued partitions of confirmed operations in priority order while
// the credit allows, and always one when none of ours runs. Only operations
// that every rank submitted take credit, so credit is only ever held by
// partitions that run on every rank (each announced, hence admitted
// everywhere): they finish and release it, whatever the order of
// submissions. See async_engine.h.
void AsyncEngine::admit_locked(std::vector<AsyncPartition*>* starts) {
  while (AsyncPartition* p = admissible_locked()) {
    AsyncOp* o = p->op;
    p->state = AsyncPartition::State::kRunnable;
    p->credited = true;
    credited_bytes_ += p->bytes;
    ++credited_count_;
    starts->push_back(p);
    if (--o->queued == 0) {
      ready_.erase(ready_.begin());
      o->in_ready = false;
    }
  }
}

// The next queued partition of the head of the ready queue if the credit
// lets it start now, else null. When it returns null with operations
// ready, a running partition weighs on the head, and its end admits again.
AsyncPartition* AsyncEngine::admissible_locked() {
  if (ready_.empty()) return nullptr;
  AsyncOp* o = ready_.begin()->op;
  while (o->parts[o->next_queued].state != AsyncPartition::State::kQueued) ++o->next_queued;
  AsyncPartition* p = &o->parts[o->next_queued];
  // Partitions that peers started count when they come first in our own
  // order (the same operation, or a more urgent one): then the ranks
  // share the window rather than each adding a partition of its own.
  uint64_t bytes = credited_bytes_;
  uint32_t count = credited_count_;
  const QueueKey& head = *ready_.begin();
  for (const AsyncPartition* q : peer_started_) {
    if (q->op == o || QueueKey{q->op->spec.priority, q->op->order, q->op} < head) {
      bytes += q->bytes;
      ++count;
    }
  }
  if (count != 0 && (bytes + p->bytes > credit_bytes_.load() || count >= kMaxCredited)) {
    return nullptr;
  }
  return p;
}

void AsyncEngine::confirm_locked(AsyncOp* o) {
  if (o->confirmed) return;
  o->confirmed = true;
  if (o->queued > 0 && !o->in_ready) {
    ready_.insert(QueueKey{o->spec.priority, o->order, o});
    o->in_ready = true;
  }
}

void AsyncEngine::saw_signature_locked(AsyncOp* o, int src) {
  if (src < 0 || src >= size_ || o->seen[static_cast<size_t>(src)]) return;
  o->seen[static_cast<size_t>(src)] = 1;
  ++o->sigs_seen;
}

// A peer started op's partition `index`: start it here too, whatever the
// credit. It weighs on admission (admit_locked) if every rank submitted the
// operation (then it surely completes); one still waiting for a rank's
// submission must not, or that rank could wait for a partition it keeps
// queued.
void AsyncEngine::force_locked(AsyncOp* op, uint32_t index) {
  AsyncPartition* p = &op->parts[index];
  if (p->state != AsyncPartition::State::kQueued) return;
  p->state = AsyncPartition::State::kRunnable;
  if (op->confirmed) {
    p->peer_started = true;
    peer_started_.push_back(p);
  }
  if (--op->queued == 0 && op->in_ready) {
    ready_.erase(QueueKey{op->spec.priority, op->order, op});
    op->in_ready = false;
  }
  dispatch_locked(p);
}

void AsyncEngine::drop_queued_locked(AsyncOp* op) {
  for (auto& p : op->parts) {
    if (p.state != AsyncPartition::State::kQueued) continue;
    p.state = AsyncPartition::State::kDone;
    --op->unfinished;
  }
  op->queued = 0;
  if (op->in_ready) {
    ready_.erase(QueueKey{op->spec.priority, op->order, op});
    op->in_ready = false;
  }
}

// Admits what the credit allows, announces it and dispatches it. After a
// confirmation seen on a transport thread (which must not send) this runs
// on a worker (a null entry of runnable_) or a parked waiter. With
// `keep_one`, the first partition admitted is returned, marked running, for
// the calling thread to run; the others go to the pool.
AsyncPartition* AsyncEngine::admit_and_start(bool keep_one) {
  std::vector<AsyncPartition*> starts;
  {
    std::lock_guard<std::mutex> lock(mu_);
    admit_locked(&starts);
  }
  announce(starts, nullptr, 0);
  return dispatch_starts(&starts, keep_one);
}

// Dispatches the partitions of *starts; with `keep_first`, the first one is
// kept back for the calling thread instead, marked running, and returned.
AsyncPartition* AsyncEngine::dispatch_starts(std::vector<AsyncPartition*>* starts,
                                             bool keep_first) {
  if (starts->empty()) return nullptr;
  AsyncPartition* first = keep_first ? starts->front() : nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  for (AsyncPartition* p : *starts) {
    if (p == first) {
      p->state = AsyncPartition::State::kRunning;
    } else {
      dispatch_locked(p);
    }
  }
  return first;
}

void AsyncEngine::hand_off(AsyncPartition* p) {
  std::lock_guard<std::mutex> lock(mu_);
  p->state = AsyncPartition::State::kRunnable;
  dispatch_locked(p);
}

void AsyncEngine::run_chain(AsyncPartition* p) {
  while (p != nullptr) p = run_partition_task(p);
}

// Puts a started partition where a worker (or a waiting caller) takes it.
// A started partition must never wait for a thread: spawn one if none idle.
void AsyncEngine::dispatch_locked(AsyncPartition* p) {
  if (stop_) return;  // closed: nothing runs any more
  if (hand_to_parked_locked(p)) return;
  runnable_.push_back(p);
  if (idle_workers_ >= runnable_.size()) {
    work_cv_.notify_one();
  } else {
    workers_.emplace_back([this] { worker_loop(); });
  }
}

// Tells every peer that this rank started `starts` on its own credit (those
// of `skip` below `prefix` went out with its signature frame).
void AsyncEngine::announce(const std::vector<AsyncPartition*>& starts, const AsyncOp* skip,
                           uint32_t prefix) {
  if (size_ <= 1) return;
  for (AsyncPartition* p : starts) {
    if (p->op == skip && p->index < prefix) continue;
    AsyncOp* o = p->op;
    OpPeers peers(engine_, o->spec.name, o->name_hash, (o->seq << kPartitionBits) | p->index, 0,
                  o->deadline);
    // The partition's own frames follow at once (or it waits or ends, which
    // sends held frames first): the start frame rides along with them, one
    // write and one wake-up of the peer instead of two.
    peers.set_hold_sends(true);
    for (int r = 0; r < size_; ++r) {
      if (r != rank_) peers.isend(r, Tag{0, kStartStep}, nullptr, 0);
    }
  }
}

bool AsyncEngine::on_control_frame(int src, uint64_t name_hash, uint64_t wire_seq, uint32_t step,
                                   uint32_t chunk) {
  const uint64_t seq = wire_seq >> kPartitionBits;
  const uint32_t part = static_cast<uint32_t>(wire_seq & kPartitionMask);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pending_.find({name_hash, seq});
  if (step == kGaveUpStep && it != pending_.end() && it->second->ready) {
    // In progress here: it cannot complete any more.
    AsyncOp* o = it->second.get();
    o->set_error(timeout_error(
        timed_out_text(o->label(), timeout_ms_,
                       "rank " + std::to_string(src) + " gave up on it while this rank ran it")));
    stop_failed_locked(o);
    return false;
  }
  if (it != pending_.end() && it->second->ready) {
    AsyncOp* o = it->second.get();
    if (step == kSigStep) {
      for (uint32_t i = 0; i < chunk && i < o->plan.count; ++i) force_locked(o, i);
      saw_signature_locked(o, src);
      if (!o->confirmed && o->sigs_seen + 1 == static_cast<uint32_t>(size_)) {
        confirm_locked(o);
        // One admission task at a time is enough: it admits everything
        // that fits when it runs. None while nothing fits: the end of a
        // running partition that weighs on the head admits then (no
        // wake-up for nothing).
        if (o->in_ready && !admit_task_queued_ && admissible_locked() != nullptr) {
          admit_task_queued_ = true;
          dispatch_locked(nullptr);
        }
      }
    } else if (part < o->plan.count) {
      force_locked(o, part);
    }
    return false;
  }
  if (it == pending_.end()) {
    // A signature frame for a lane operation: the peer ran another kind.
    if (step == kSigStep && lane_ && lane_->on_foreign_signature(src, name_hash, seq)) return true;
    auto ns = next_seq_.find(name_hash);
    const OpKey key{name_hash, seq};
    if (ns != next_seq_.end() && seq < ns->second &&
        std::find(lane_entering_.begin(), lane_entering_.end(), key) == lane_entering_.end()) {
      return true;  // already finished here: no receive will ever take it
    }
  }
  Remembered& r = remembered_[{name_hash, seq}];
  if (r.first_ns == 0) r.first_ns = now_ns();
  if (step == kSigStep) {
    if (r.submitted_by.empty()) {
      // The inspector reports stalls of these too: it looks again.
      ++remembered_gen_;
      if (inspector_sleeping_) inspect_cv_.notify_one();
    }
    r.submitted_by.insert(src);
    if (chunk > r.prefix) r.prefix = chunk;
  } else if (step == kGaveUpStep) {
    r.gave_up = true;
  } else {
    r.parts.insert(part);
  }
  return false;
}

// Tells every peer that `o` timed out here: the silent ones must not
// complete it alone when they submit it later, nor the others with the
// silent ones' data.
void AsyncEngine::send_gave_up(const AsyncOp* o) {
  OpPeers peers(engine_, o->spec.name, o->name_hash, (o->seq << kPartitionBits) | kSigPartition, 0,
                Deadline::after_ms(timeout_ms_));
  for (int r = 0; r < size_; ++r) {
    if (r != rank_) peers.isend(r, Tag{0, kGaveUpStep}, nullptr, 0);
  }
}

void AsyncEngine::on_broken(const Status& why) {
  // Pending operations end with the cause: their requests report it.
  bool reported = false;
  if (lane_) {
    reported = lane_->pending() > 0;
    lane_->on_broken(why);
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& kv : pending_) {
    AsyncOp* o = kv.second.get();
    if (!o->ready) continue;
    reported = true;
    o->set_error(why);
    stop_failed_locked(o);
  }
  if (reported) engine_->cause_reported();
}

// `o` failed (its error is set): a fused one waiting for data completes
// with the error, queued partitions never run, and if nothing of it runs any
// more its finalize goes to a worker (completion may wait on transports:
// never on the calling thread, which may be a transport's).
void AsyncEngine::stop_failed_locked(AsyncOp* o) {
  if (o->fused) fused_ready_locked(o, false);
  const uint32_t before = o->unfinished;
  drop_queued_locked(o);
  if (before != 0 && o->unfinished == 0) {
    o->finalize_task.op = o;
    o->finalize_task.index = kFinalizeTask;
    o->finalize_task.state = AsyncPartition::State::kRunnable;
    dispatch_locked(&o->finalize_task);
  }
}

// ---- running --------------------------------------------------------------

void AsyncEngine::worker_loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (!runnable_.empty()) {
      AsyncPartition* p = runnable_.front();
      runnable_.pop_front();
      if (p != nullptr) {
        p->state = AsyncPartition::State::kRunning;
      } else {
        admit_task_queued_ = false;
      }
      lock.unlock();
      if (p == nullptr) {
        run_chain(admit_and_start(true));
      } else if (p->index == kFinalizeTask) {
        finalize(p->op);
      } else {
        run_chain(p);
      }
      lock.lock();
      continue;
    }
    if (stop_) return;
    ++idle_workers_;
    work_cv_.wait(lock, [this] { return !runnable_.empty() || stop_; });
    --idle_workers_;
  }
}

// ---- waiting ----------------------------------------------------------------

void AsyncEngine::wait(const std::shared_ptr<AsyncRequest>& req, const WaitRest& rest) {
  if (req->lane_) {
    req->wait([this, &req] { return lane_->help(req, false); });
    return;
  }
  for (;;) {
    while (!req->done() && help(req, rest)) {
    }
    AsyncPartition* task = nullptr;
    if (!park(req, &task)) return;  // done
    run_handed(task, req, rest);
  }
}

// Registers the calling thread as a parked waiter and sleeps until `req` is
// done or a task is handed to it. Returns whether one was (in *task; null is
// an admission). A handed task is always run, even if `req` is done by then:
// it was taken off the queues for this thread.
bool AsyncEngine::park(const std::shared_ptr<AsyncRequest>& req, AsyncPartition** task) {
  Parked me{req.get()};
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (stop_) {
      lock.unlock();       // (close() needs the lock to end what is left)
      req->wait(nullptr);  // close() ends every operation
      return false;
    }
    parked_.push_back(&me);
  }
  {
    std::unique_lock<std::mutex> lock(req->mu_);
    req->cv_.wait(lock, [&] { return me.handed || req->done_.load(std::memory_order_relaxed); });
  }
  {
    // Handing happens under mu_ and unregisters the waiter: once this
    // thread is off the list, nobody hands it anything more.
    std::lock_guard<std::mutex> lock(mu_);
    auto it = std::find(parked_.begin(), parked_.end(), &me);
    if (it != parked_.end()) parked_.erase(it);
  }
  std::lock_guard<std::mutex> lock(req->mu_);
  *task = me.task;
  return me.handed;
}

// Gives `p` (null: an admission) to a parked waiter instead of the pool: to
// the one waiting for p's operation, else, for an admission or a partition
// of an operation every rank submitted (which never waits for a peer's
// application code), to any. Caller holds mu_.
bool AsyncEngine::hand_to_parked_locked(AsyncPartition* p) {
  if (parked_.empty()) return false;
  auto it = parked_.end();
  if (p != nullptr) {
    it = std::find_if(parked_.begin(), parked_.end(),
                      [p](const Parked* w) { return w->req == p->op->req.get(); });
  }
  if (it == parked_.end()) {
    if (p != nullptr && (p->index == kFinalizeTask || !p->op->confirmed)) return false;
    it = parked_.begin();
  }
  Parked* w = *it;
  parked_.erase(it);
  if (p != nullptr) p->state = AsyncPartition::State::kRunning;
  {
    std::lock_guard<std::mutex> lock(w->req->mu_);
    w->task = p;
    w->handed = true;
  }
  w->req->cv_.notify_all();
  return true;
}

// Runs a task handed to a parked waiter of `req`.
void AsyncEngine::run_handed(AsyncPartition* p, const std::shared_ptr<AsyncRequest>& req,
                             const WaitRest& rest) {
  if (p == nullptr) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      admit_task_queued_ = false;
    }
    p = admit_and_start(true);
    if (p != nullptr) run_then_return(p, req, rest);
  } else if (p->index == kFinalizeTask) {
    finalize(p->op);
  } else {
    run_then_return(p, req, rest);
  }
}

bool AsyncEngine::help(const std::shared_ptr<AsyncRequest>& req, const WaitRest& rest) {
  if (req->lane_) return lane_->help(req, true);
  if (fuser_) fuser_->flush();
  AsyncPartition* mine = nullptr;
  {
    std::unique_lock<std::mutex> lock(mu_);
    for (auto it = runnable_.begin(); it != runnable_.end(); ++it) {
      if (*it != nullptr && (*it)->op->req == req) {
        mine = *it;
        runnable_.erase(it);
        break;
      }
    }
    AsyncOp* own = req->op_;
    if (mine == nullptr) {
      // A fused operation ready to complete (never waits): ours first.
      AsyncOp* done = take_completion_locked(req.get(), true);
      if (done != nullptr) mine = &done->parts[0];
    }
    if (mine == nullptr && own != nullptr && own->fused) {
      if (own->fused_state == AsyncOp::FusedState::kHanded) {
        mine = &own->parts[0];
      } else if (own->fused_state == AsyncOp::FusedState::kWaiting) {
        // Move its data here (shared memory has no progress thread; over
        // TCP the waiter reads the socket itself): the receive that
        // completes last hands the operation to this thread.
        TransferHandle t;
        for (const auto& r : own->one_shot.receives()) {
          if (!r->done()) {
            t = r;
            break;
          }
        }
        // Another thread waiting for the same request may complete and
        // free the operation while this one drives its data: hold it.
        std::shared_ptr<AsyncOp> hold = pending_.at({own->name_hash, own->seq});
        ++own->helpers;
        ++helping_;
        lock.unlock();
        if (t)
          wait_transfer(
              t, Deadline::after_ms(std::min(20, std::max(1, own->deadline.remaining_ms()))));
        lock.lock();
        --helping_;
        --own->helpers;
        if (own->fused_state != AsyncOp::FusedState::kHanded) {
          if (!t) {
            // No receive left open, yet not ready: the last listener is
            // about to run. Yield rather than spin on the lock.
            lock.unlock();
            std::this_thread::yield();
          }
          return true;
        }
        mine = &own->parts[0];
      }
      if (mine != nullptr) own->fused_state = AsyncOp::FusedState::kRunning;
    }
    // None of ours, but started partitions of other operations wait for a
    // worker: run the first here (this thread would only sleep, and the
    // operations it waits for often need them, e.g. under wait_all). Only
    // of an operation every rank submitted (confirmed): one that waits for
    // a peer's submission could keep this thread, and the application's
    // next step, from the peer that waits for that step to submit it.
    if (mine == nullptr && !req->done()) {
      for (auto it = runnable_.begin(); it != runnable_.end(); ++it) {
        if (*it != nullptr && (*it)->index != kFinalizeTask && (*it)->op->confirmed) {
          mine = *it;
          runnable_.erase(it);
          break;
        }
      }
    }
    if (mine == nullptr) {
      // Nothing to run yet: if the op waits for peers' signature frames
      // over shared memory (which has no progress thread), read them here.
      ShmTransport* shm = engine_->shm();
      if (shm == nullptr) return false;
      TransferHandle t;
      for (auto& kv : pending_) {
        AsyncOp* o = kv.second.get();
        if (o->req != req || !o->ready || o->confirmed) continue;
        for (auto& s : o->sig_recv) {
          if (s && !s->done()) {
            t = s;
            break;
          }
        }
        break;
      }
      if (!t) return false;
      lock.unlock();
      shm->wait(t, Deadline::after_ms(2));
      // A confirmation seen just now: admit here rather than wait for a
      // worker that the hook may have woken (one thread hand-off fewer).
      if (AsyncPartition* p = admit_and_start(true)) run_then_return(p, req, rest);
      return true;
    }
    mine->state = AsyncPartition::State::kRunning;
  }
  if (mine->index == kFinalizeTask) {
    finalize(mine->op);
  } else {
    run_then_return(mine, req, rest);
  }
  return true;
}

// For a thread waiting for `req`: runs p and its continuations while req is
// pending (or the continuation is of a request in `rest`, which this thread
// waits for next), then hands the next continuation to the pool and returns.
void AsyncEngine::run_then_return(AsyncPartition* p, const std::shared_ptr<AsyncRequest>& req,
                                  const WaitRest& rest) {
  p = run_partition_task(p);
  while (p != nullptr && (!req->done() || rest.has(p->op->req.get()))) p = run_partition_task(p);
  if (p != nullptr) hand_off(p);
}

AsyncPartition* AsyncEngine::run_partition_task(AsyncPartition* p) {
  AsyncOp* o = p->op;
  Status st;
  if (o->fused) {
    st = run_fused(o);  // its start was at submission
  } else {
    emit(AsyncEvent::Type::kStart, *o, p->index, p->bytes, Status::ok());
    st = o->failed.load() ? o->first_error() : run_planned(p);
    // Its start frame leaves with its first frame or before it first
    // waits; one that did neither (empty, or failed before) sends it now.
    engine_->flush_held();
  }
  emit(AsyncEvent::Type::kPartitionDone, *o, p->index, p->bytes, st);
  return partition_done(p, st);
}

// A partition of an operation that is not fused: its kind's algorithm on
// its slice, over a Peers view with the partition's own frame keys.
Status AsyncEngine::run_planned(AsyncPartition* p) {
  AsyncOp* o = p->op;
  OpPeers peers(engine_, o->spec.name, o->name_hash, (o->seq << kPartitionBits) | p->index,
                o->digest, o->deadline);
  if (o->plan.count > 1) {
    peers.set_display(o->seq, " partition " + std::to_string(p->index));
  } else {
    peers.set_display(o->seq, "");
  }
  if (size_ > 1) peers.set_watch([this, o] { return check_signatures(o); });
  // No exception may leave an engine thread (DESIGN.md: no abort on
  // errors): a failed allocation fails this operation instead.
  Status st;
  try {
    st = run_partition(peers, algo_, o->spec, o->plan, p->index);
  } catch (const std::bad_alloc&) {
    st = system_error(o->label() + ": out of memory");
  } catch (...) {
    st = internal_error(o->label() + ": unexpected exception");
  }
  if (!st.is_ok()) peers.withdraw_outstanding(st);
  return st;
}

// Releases p's credit and admits what it allows. Returns the first
// partition admitted as the caller's continuation, unless completing the
// operation (here, first) could block: then every admitted partition goes
// to the pool. A completion is quick when every peer's signature frame is
// in (confirmed) and no user callback runs.
AsyncPartition* AsyncEngine::partition_done(AsyncPartition* p, const Status& st) {
  AsyncOp* o = p->op;
  std::vector<AsyncPartition*> starts;
  bool fin, quick;
  {
    std::lock_guard<std::mutex> lock(mu_);
    p->state = AsyncPartition::State::kDone;
    if (p->credited) {
      credited_bytes_ -= p->bytes;
      --credited_count_;
    }
    if (p->peer_started) {
      peer_started_.erase(std::find(peer_started_.begin(), peer_started_.end(), p));
    }
    if (p->eager) --eager_running_;
    if (!st.is_ok()) {
      o->set_error(st);
      drop_queued_locked(o);
    }
    fin = --o->unfinished == 0;
    quick = !fin || (o->confirmed && !o->spec.on_complete);
    admit_locked(&starts);
  }
  announce(starts, nullptr, 0);
  AsyncPartition* next = dispatch_starts(&starts, quick);
  if (fin) finalize(o);
  return next;
}

}  // namespace kf
