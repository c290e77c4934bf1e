// Connects the asynchronous engine's trace hook (AsyncEngine::set_observer)
// to a Tracer: engine events become timeline events. Owned next to the
// engine by whoever creates it:
//
//   timeline_ = kf::AsyncTimeline::attach(engine, rank);  // null when KF_TIMELINE unset
//   ...
//   timeline_.reset();  // before the engine goes: detaches, writes the file
//
// A communicator's timeline is attached by src/api, the layer above both:
//
//   comm->set_observer(kf::comm_timeline(comm));  // null when KF_TIMELINE unset
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "base/log.h"
#include "monitor/trace.h"
#include "sched/async_engine.h"

namespace kf {

class CommObserver;  // sched/communicator.h
class Communicator;

// Turns AsyncEvents into Tracer calls. Thread-safe; usable without an engine
// (the tests feed it events directly).
class TraceObserver {
 public:
  explicit TraceObserver(std::shared_ptr<Tracer> tracer) : tracer_(std::move(tracer)) {}
  void operator()(const AsyncEvent& e);
  // The timeline id of operation (name, seq): the same on every rank, so
  // the files of different ranks can be matched.
  static uint64_t op_id(const std::string& name, uint64_t seq);

 private:
  struct OpState {
    uint64_t bytes = 0;
    bool started = false;
  };
  std::shared_ptr<Tracer> tracer_;  // shared: a late event never sees it freed
  std::mutex mu_;
  std::unordered_map<uint64_t, OpState> ops_;  // submitted, not finished; guarded by mu_
};

// Defined inline here: only code that owns an AsyncEngine instantiates it.
class AsyncTimeline {
 public:
  // Null when KF_TIMELINE is unset; else installs itself as the observer.
  static std::unique_ptr<AsyncTimeline> attach(AsyncEngine* engine, int rank,
                                               const std::string& comm_name = "world") {
    std::unique_ptr<Tracer> tracer = Tracer::from_env(rank, comm_name);
    if (!tracer || !engine) return nullptr;
    return std::unique_ptr<AsyncTimeline>(
        new AsyncTimeline(engine, std::shared_ptr<Tracer>(std::move(tracer))));
  }
  // Removes the observer and writes the file. A call already running when
  // the observer is replaced keeps the observer and the tracer alive (shared
  // pointers); the tracer drops events that arrive after close().
  ~AsyncTimeline() {
    engine_->set_observer({});
    const Status s = tracer_->close();
    if (!s.is_ok()) KF_LOG_WARN("timeline: " + s.message());
  }
  AsyncTimeline(const AsyncTimeline&) = delete;
  AsyncTimeline& operator=(const AsyncTimeline&) = delete;
  Tracer* tracer() { return tracer_.get(); }

 private:
  AsyncTimeline(AsyncEngine* engine, std::shared_ptr<Tracer> tracer)
      : engine_(engine), tracer_(std::move(tracer)) {
    auto obs = std::make_shared<TraceObserver>(tracer_);
    engine_->set_observer([obs](const AsyncEvent& e) { (*obs)(e); });
  }
  AsyncEngine* engine_;
  std::shared_ptr<Tracer> tracer_;
};

// The KF_TIMELINE timeline of `comm`, for Communicator::set_observer: the
// events of its async engine (an AsyncTimeline) and the online tuner's
// decisions, as "autotune" instants next to their effect. Written when the
// communicator shuts down. Null when KF_TIMELINE is unset.
std::unique_ptr<CommObserver> comm_timeline(Communicator* comm);

}  // namespace kf
