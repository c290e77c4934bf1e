// AsyncEngine: requests, construction and submission. The priority queue,
// credit window and control frames are in async_schedule.cc, the workers and
// waiting threads in async_wait.cc, completion, signature checks and the
// stall inspector in async_finish.cc.
#include "sched/async_engine.h"

#include <algorithm>
#include <chrono>
#include <iterator>

#include "base/block_pool.h"
#include "base/config.h"
#include "base/deadline.h"
#include "base/dtype.h"
#include "sched/any_completion.h"
#include "sched/async_lane.h"
#include "sched/async_state.h"
#include "sched/async_texts.h"
#include "sched/op_kind.h"
#include "transport/bundle.h"
#include "transport/frame.h"

namespace kf {
namespace {

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
  // (Sequentially consistent, as finish()'s store: kf_request_wait_any
  // relies on it, see AnyCompletion::signal(). On x86 it is a plain load.)
  return done_.load();
}

const Status& AsyncRequest::status() const {
  // Written once, before done_ was released; until then finish() may be
  // writing it.
  static const Status* const pending = new Status();  // never destroyed: usable at exit
  return done() ? status_ : *pending;
}

void AsyncRequest::wait(const std::function<bool()>& help) {
  while (!done() && help && help()) {
  }
  if (done()) return;
  sleep_until([] { return false; });
}

void AsyncRequest::flush_held() {
  if (!maybe_held_.load(std::memory_order_acquire)) return;
  std::weak_ptr<Fuser> held;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (held_.expired()) return;
    held.swap(held_);
  }
  // Null once the communicator closed its fuser (which sent everything).
  if (std::shared_ptr<Fuser> f = held.lock()) f->flush();
}

std::shared_ptr<AsyncRequest> AsyncRequest::make() {
  static BlockPool* pool = new BlockPool(1024);  // never destroyed: requests may outlive main()
  return std::allocate_shared<AsyncRequest>(PoolAllocator<AsyncRequest>(pool));
}

void AsyncRequest::finish(const Status& st) {
  status_ = st;
  done_.store(true);  // after status_: done() and status() need no lock
  // No lock unless a thread sleeps on the request (sleep_until(); most
  // waiters drive instead).
  if (sleepers_.load() > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    notify_locked();
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
      partition_bytes_(knob_positive(Knob::KF_PARTITION_BYTES)),
      credit_bytes_(knob_positive(Knob::KF_CREDIT_BYTES)),
      fusion_threshold_(
          static_cast<uint64_t>(std::max<int64_t>(0, knob_int(Knob::KF_FUSION_THRESHOLD_BYTES)))) {
  if (fusion_threshold_ > 0 && size_ > 1) {
    FusionOptions fo;
    fo.max_bytes = knob_positive(Knob::KF_FUSION_BUNDLE_BYTES);
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
  stop_events();
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
    // Their partitions, which the queues may still point to.
    ready_.clear();
    credited_.clear();
    peer_started_.clear();
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
      engine_, shm, lo, &has_observer_,
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
  partition_bytes_.store(bytes > 0 ? bytes : knob_positive(Knob::KF_PARTITION_BYTES));
}

void AsyncEngine::set_credit_bytes(uint64_t bytes) {
  credit_bytes_.store(bytes > 0 ? bytes : knob_positive(Knob::KF_CREDIT_BYTES));
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

Status AsyncEngine::submit(AsyncOpSpec&& spec, std::shared_ptr<AsyncRequest>* out) {
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
  if (!*out) *out = AsyncRequest::make();
  o->req = *out;
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
    o->seq = next_seq_.claim({o->name_hash, 0}).first->second++;
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
    } else if (auto listener = signature_listener(op)) {
      // Likewise for its event partitions: a mismatch ends them.
      o->ctl_recv->set_recv_listener(std::move(listener));
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
      // (Started below with the others, on this thread if they can be.)
      for (uint32_t i = 0; i < rem->second.prefix && i < o->plan.count; ++i) {
        force_locked(o, i, &starts);
      }
      for (uint32_t i : rem->second.parts) {
        if (i < o->plan.count) force_locked(o, i, &starts);
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

  if (fused_here) {
    // Its frames are still held (run_fused): waiting for or testing the
    // request sends them, else the fuser's cycle does.
    std::lock_guard<std::mutex> lock(o->req->mu_);
    o->req->held_ = fuser_;
    o->req->maybe_held_.store(true, std::memory_order_release);
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

Status AsyncEngine::submit_to_lane(AsyncOpSpec&& spec, std::shared_ptr<AsyncRequest>* out) {
  const uint64_t name_hash = hash_name(spec.name.data(), spec.name.size());
  if (!*out) *out = AsyncRequest::make();
  const std::shared_ptr<AsyncRequest>& req = *out;  // (a reference: no count to change)
  req->lane_ = true;
  AsyncLane::Intake intake;
  {
    // Numbered and taken in by the lane under one lock: a peer's signature
    // frame for it (on_control_frame(), under the same lock) finds it in
    // the lane, or comes before it was numbered and is remembered.
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) {
      return aborted_error("the communicator is being destroyed: cannot run '" + spec.name + "'");
    }
    const uint64_t seq = next_seq_.claim({name_hash, 0}).first->second++;
    std::vector<int> foreign;  // ranks that sent a signature frame: another kind
    auto rem = remembered_.find({name_hash, seq});
    if (rem != remembered_.end()) {
      foreign.assign(rem->second.submitted_by.begin(), rem->second.submitted_by.end());
      remembered_.erase(rem);
    }
    lane_->take_in(std::move(spec), name_hash, seq, partition_bytes_.load(), foreign, req, &intake);
  }
  lane_->after_take_in(&intake);  // (completion callbacks: without the lock)
  return Status::ok();
}

}  // namespace kf
