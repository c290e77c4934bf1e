#include "monitor/trace_observer.h"

#include <string>

#include "kungfu/kungfu.h"
#include "sched/communicator.h"

namespace kf {
namespace {

class CommTimeline : public CommObserver {
 public:
  explicit CommTimeline(std::unique_ptr<AsyncTimeline> timeline) : timeline_(std::move(timeline)) {}
  void on_tune(const TuneParams& p) override {
    timeline_->tracer()->instant("autotune",
                                 "{\"partition_bytes\":" + std::to_string(p.partition_bytes) +
                                     ",\"credit_bytes\":" + std::to_string(p.credit_bytes) + "}");
  }

 private:
  std::unique_ptr<AsyncTimeline> timeline_;
};

}  // namespace

std::unique_ptr<CommObserver> comm_timeline(Communicator* comm) {
  std::unique_ptr<AsyncTimeline> timeline =
      AsyncTimeline::attach(&comm->async(), comm->rank(), comm->name());
  if (!timeline) return nullptr;
  return std::make_unique<CommTimeline>(std::move(timeline));
}

uint64_t TraceObserver::op_id(const std::string& name, uint64_t seq) {
  // FNV-1a of the name, mixed with the sequence number: stable across
  // processes (std::hash need not be).
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return h ^ (seq * 0x9e3779b97f4a7c15ull);
}

void TraceObserver::operator()(const AsyncEvent& e) {
  if (!e.name) return;
  const std::string& name = *e.name;
  const uint64_t id = op_id(name, e.seq);
  // The op's slice starts at its first partition's start; partitions that
  // never start (a failed signature check) still get a balanced slice.
  bool first_start = false;
  uint64_t op_bytes = e.bytes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    switch (e.type) {
      case AsyncEvent::Type::kSubmit:
        ops_[id].bytes = e.bytes;
        break;
      case AsyncEvent::Type::kStart: {
        OpState& s = ops_[id];
        first_start = !s.started;
        s.started = true;
        op_bytes = s.bytes;
        break;
      }
      case AsyncEvent::Type::kPartitionDone:
        break;
      case AsyncEvent::Type::kFinish: {
        auto it = ops_.find(id);
        first_start = it == ops_.end() || !it->second.started;
        if (it != ops_.end()) ops_.erase(it);
        break;
      }
    }
  }
  switch (e.type) {
    case AsyncEvent::Type::kSubmit:
      tracer_->submit(id, name, e.priority, e.bytes);
      break;
    case AsyncEvent::Type::kStart:
      if (first_start) tracer_->start(id, name, e.priority, op_bytes);
      tracer_->chunk_begin(id, name, e.partition, e.bytes);
      break;
    case AsyncEvent::Type::kPartitionDone:
      tracer_->chunk_end(id, name, e.partition);
      break;
    case AsyncEvent::Type::kFinish:
      if (first_start) tracer_->start(id, name, e.priority, e.bytes);
      tracer_->finish(id, name,
                      e.status == KF_SUCCESS
                          ? "ok"
                          : kf_status_string(static_cast<kf_status_t>(e.status)));
      break;
  }
}

}  // namespace kf
