// Event partitions (sched/async_event.h): starting, advancing and ending
// them, and the queue that carries their news between threads.
#include "sched/async_event.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "algo/collectives.h"
#include "algo/common.h"
#include "algo/strategy.h"
#include "base/block_pool.h"
#include "sched/async_engine.h"
#include "sched/async_state.h"
#include "sched/async_texts.h"
#include "sched/op_kind.h"

namespace kf {
namespace {

// This thread drains the queue before it sleeps (it is draining or starting
// a partition), or runs the transport's progress hook, which drains it:
// news it queues needs no wake-up.
thread_local bool t_drains_soon = false;
// This thread holds an engine's drain_events_mu_ (one engine at a time: a
// drain never enters another communicator).
thread_local bool t_draining = false;

bool drain_follows() { return t_drains_soon || TcpTransport::hook_follows(); }

struct DrainsSoon {
  DrainsSoon() : was_(t_drains_soon) { t_drains_soon = true; }
  ~DrainsSoon() { t_drains_soon = was_; }
  DrainsSoon(const DrainsSoon&) = delete;
  DrainsSoon& operator=(const DrainsSoon&) = delete;

 private:
  const bool was_;
};

// Queues `o`'s running event partitions (its signature frames arrived, or
// it failed): their next advance looks at the operation's state.
void queue_running(EventQueue& q, AsyncOp* o, bool wake) {
  std::vector<std::shared_ptr<EventPartition>> running;
  {
    std::lock_guard<std::mutex> lock(o->mu);
    running = o->events;
  }
  for (auto& e : running) q.push(e, wake);
}

}  // namespace

// ---- EventQueue, ScratchCache ------------------------------------------------

void EventQueue::push(const std::shared_ptr<EventPartition>& e, bool wake) {
  if (e->queued.exchange(true)) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return;
  queue_.push_back(e);
  // Under the lock: once close() returned, wake_ is never called again.
  if (wake) wake_();
}

std::vector<std::shared_ptr<EventPartition>> EventQueue::take() {
  std::vector<std::shared_ptr<EventPartition>> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    out.swap(queue_);
  }
  for (auto& e : out) e->queued.store(false);
  // A completion whose push found an entry still marked (between the swap
  // and the clearing) is seen by the advance that follows: its transfer's
  // done flag was written before that push's exchange, and this fence
  // orders the clearing before the advance's reads (store-load).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return out;
}

void EventQueue::push_start(AsyncPartition* p) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!closed_) starts_.push_back(p);
}

void EventQueue::push_admit() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!closed_) admit_ = true;
}

bool EventQueue::take_starts(std::vector<AsyncPartition*>* starts) {
  std::lock_guard<std::mutex> lock(mu_);
  starts->swap(starts_);
  starts_.clear();
  return std::exchange(admit_, false);
}

bool EventQueue::empty() {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.empty() && starts_.empty() && !admit_;
}

void EventQueue::close() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  queue_.clear();
  starts_.clear();
  admit_ = false;
}

std::unique_ptr<char[]> ScratchCache::take(size_t bytes, size_t* got) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    // The smallest block that fits.
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->first >= bytes && (best == free_.end() || it->first < best->first)) best = it;
    }
    if (best != free_.end()) {
      *got = best->first;
      kept_ -= best->first;
      std::unique_ptr<char[]> b = std::move(best->second);
      free_.erase(best);
      return b;
    }
  }
  *got = bytes;
  return std::unique_ptr<char[]>(new char[bytes > 0 ? bytes : 1]);
}

void ScratchCache::give(std::unique_ptr<char[]> block, size_t bytes) {
  if (!block) return;
  std::lock_guard<std::mutex> lock(mu_);
  // (Under AddressSanitizer nothing is kept: a use after free is caught.)
  if (!kKeepMemory || bytes > kKeepBytes) return;
  while (!free_.empty() && (free_.size() >= kKeep || kept_ + bytes > kKeepBytes)) {
    // Keep the larger blocks: they serve every smaller request.
    auto smallest =
        std::min_element(free_.begin(), free_.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
    if (smallest->first >= bytes) return;
    kept_ -= smallest->first;
    free_.erase(smallest);
  }
  kept_ += bytes;
  free_.emplace_back(bytes, std::move(block));
}

size_t ScratchCache::kept_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return kept_;
}

// ---- the engine's side -------------------------------------------------------

void AsyncEngine::start_events() {
  TcpTransport* tcp = engine_->tcp_transport();
  if (size_ < 2 || tcp == nullptr || engine_->shm() != nullptr || events_) return;
  Engine* engine = engine_;
  events_ = std::make_shared<EventQueue>([engine] { engine->tcp_transport()->wake_progress(); });
  tcp->set_progress_hook([this] { drain_events(); });
}

void AsyncEngine::stop_events() {
  if (!events_) return;
  engine_->tcp_transport()->set_progress_hook(nullptr);
  drain_events();
  events_->close();
}

bool AsyncEngine::runs_as_event(const AsyncPartition* p) const {
  if (!events_ || p == nullptr || p->index == kFinalizeTask) return false;
  const AsyncOp* o = p->op;
  const AsyncOpSpec& s = o->spec;
  if (o->fused || s.body || s.kind != kAllReduce) return false;
  const size_t es = dtype_size(s.dtype);
  const uint64_t len = partition_len(o->plan, s.count, p->index);
  // Not a strategy of its own (hierarchical, trees): those run on a thread.
  if (s.strategy >= 0 && s.hosts != nullptr &&
      !is_flat(resolve_strategy(static_cast<Strategy>(s.strategy), *s.hosts, size_, len * es,
                                s.strategy_opts))) {
    return false;
  }
  // The plain ring, in its chunks: its messages are the blocking ring's
  // (algo/ring.cc), so ranks need not agree on this.
  return uses_ring(algo_, len, es, size_) &&
         Layout::balanced_chunks(len, size_, chunk_elems(algo_, es)) <= kEventMaxChunks;
}

void AsyncEngine::start_event(AsyncPartition* p) {
  // A loop, not a recursion: a partition of a failed operation ends at its
  // start, and what its end admits starts next.
  while (p != nullptr) {
    if (!runs_as_event(p)) {
      hand_off(p);  // it would block this thread: a worker runs it
      break;
    }
    p = launch_event(p);
  }
  drain_events();
}

AsyncPartition* AsyncEngine::launch_event(AsyncPartition* p) {
  AsyncOp* o = p->op;
  const AsyncOpSpec& s = o->spec;
  emit(AsyncEvent::Type::kStart, *o, p->index, p->bytes, Status::ok());
  events_started_.fetch_add(1, std::memory_order_relaxed);
  if (o->failed.load()) {
    engine_->flush_held();  // its start frame, if any, leaves now
    return end_event(p, o->first_error());
  }
  auto peers = std::make_unique<OpPeers>(engine_, s.name, o->name_hash,
                                         (o->seq << kPartitionBits) | p->index, o->digest,
                                         o->deadline);
  peers->set_display(o->seq, o->plan.count > 1 ? " partition " + std::to_string(p->index) : "");
  auto e = std::make_shared<EventPartition>(p, std::move(peers));
  std::weak_ptr<EventPartition> w = e;
  std::shared_ptr<EventQueue> q = events_;
  auto news = [q, w] {
    if (auto live = w.lock()) q->push(live, !drain_follows());
  };
  e->peers->set_recv_listener(news);
  e->peers->set_send_listener(news);

  const size_t es = dtype_size(s.dtype);
  const uint64_t first = partition_begin(o->plan, p->index);
  const uint64_t len = partition_len(o->plan, s.count, p->index);
  e->ring = std::make_unique<RingTask>(*e->peers, static_cast<char*>(s.recv) + first * es, len,
                                       s.dtype, static_cast<kf_op_t>(s.op), chunk_elems(algo_, es));
  e->scratch = scratch_.take(e->ring->scratch_bytes(), &e->scratch_bytes);
  e->ring->use_scratch(e->scratch.get(), e->scratch_bytes);
  if (s.send != s.recv) e->ring->read_input_from(static_cast<const char*>(s.send) + first * es);
  {
    DrainsSoon scope;
    {
      std::lock_guard<std::mutex> lock(e->mu);
      e->ring->start(/*gather_now=*/false);
      // Listed once started (never advanced before), and before any advance
      // can end it (under e->mu): from now on the operation's news (a
      // signature frame, a failure) queues it too. What came before, the
      // advance queued below sees: it looks at the operation's state first.
      std::lock_guard<std::mutex> op_lock(o->mu);
      o->events.push_back(e);
    }
    // Its start frame rode along with its first frame, or leaves now.
    engine_->flush_held();
    events_->push(e, false);  // messages may be in already: the caller drains
  }
  return nullptr;
}

void AsyncEngine::drain_events() {
  // Called again inside a drain (an end starts the next partition): the
  // outer loop sees what that queued.
  if (t_draining) return;
  for (;;) {
    {
      std::unique_lock<std::mutex> drainer(drain_events_mu_, std::try_to_lock);
      // Another thread drains: it looks at the queue again after it stops.
      if (!drainer.owns_lock()) return;
      DrainsSoon scope;
      t_draining = true;
      for (;;) {
        std::vector<AsyncPartition*> starts;
        const bool admit = events_->take_starts(&starts);
        for (AsyncPartition* p : starts) start_event(p);
        if (admit) {
          {
            std::lock_guard<std::mutex> lock(mu_);
            admit_task_queued_ = false;
          }
          admit_and_start(false);  // event partitions start here, others on workers
        }
        std::vector<std::shared_ptr<EventPartition>> news = events_->take();
        if (news.empty() && starts.empty() && !admit) break;
        for (auto& e : news) advance_event(e);
      }
      t_draining = false;
    }
    if (events_->empty()) return;
  }
}

void AsyncEngine::advance_event(const std::shared_ptr<EventPartition>& e) {
  AsyncPartition* const p = e->part;
  AsyncOp* o = nullptr;
  Status st;
  {
    std::lock_guard<std::mutex> lock(e->mu);
    // Queued again after it ended (a withdrawal runs its transfers'
    // listeners): its operation may be gone, so nothing of it is touched.
    if (e->ended) return;
    o = p->op;
    // A signature mismatch seen by now, or any failure of the operation
    // (a peer gave up, the deadline, a broken communicator), ends it.
    st = check_signatures(o);
    bool done = false;
    if (st.is_ok()) st = e->ring->advance(&done);
    if (st.is_ok() && !done) {
      engine_->flush_held();
      return;
    }
    e->ended = true;
    if (!st.is_ok()) e->peers->withdraw_outstanding(st);
  }
  {
    std::lock_guard<std::mutex> lock(o->mu);
    auto listed = std::find(o->events.begin(), o->events.end(), e);
    if (listed != o->events.end()) o->events.erase(listed);
  }
  // Nothing writes to the scratch any more (its receives are in or withdrawn).
  scratch_.give(std::move(e->scratch), e->scratch_bytes);
  if (AsyncPartition* next = end_event(p, st)) start_event(next);
}

AsyncPartition* AsyncEngine::end_event(AsyncPartition* p, const Status& st) {
  emit(AsyncEvent::Type::kPartitionDone, *p->op, p->index, p->bytes, st);
  return partition_done(p, st, /*may_block=*/false);
}

bool AsyncEngine::start_on_drain_locked(AsyncPartition* p) {
  if (stop_ || !events_ || !drain_follows() || !runs_as_event(p)) return false;
  p->state = AsyncPartition::State::kRunning;
  events_->push_start(p);
  return true;
}

bool AsyncEngine::admit_on_drain_locked() {
  if (stop_ || !events_ || !drain_follows()) return false;
  events_->push_admit();
  return true;
}

// Called with the engine mutex held or not; takes the operation's.
void AsyncEngine::kick_events(AsyncOp* o) {
  if (events_) queue_running(*events_, o, true);
}

std::function<void()> AsyncEngine::signature_listener(const std::shared_ptr<AsyncOp>& op) {
  if (!events_ || op->fused || op->spec.kind != kAllReduce) return nullptr;
  std::weak_ptr<AsyncOp> w = op;
  std::shared_ptr<EventQueue> q = events_;
  return [q, w] {
    if (auto o = w.lock()) queue_running(*q, o.get(), !drain_follows());
  };
}

bool AsyncEngine::events_running(AsyncOp* o) {
  if (!events_) return false;
  std::lock_guard<std::mutex> lock(o->mu);
  return !o->events.empty();
}

// The inspector's part for an operation with running event partitions,
// which no thread waits for: at the deadline they end with a timeout.
void AsyncEngine::expire_events_locked(AsyncOp* o) {
  if (!o->failed.load()) {
    const int left = (rank_ + size_ - 1) % size_;
    std::string note = engine_->tcp_transport()->silence_note(left);
    o->set_error(timeout_error(timed_out_text(
        o->label(), timeout_ms_,
        "waiting for data from rank " + std::to_string(left) + (note.empty() ? "" : "; " + note))));
  }
  kick_events(o);
}

}  // namespace kf
