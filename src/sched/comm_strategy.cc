// The collective strategy of a Communicator: its knobs, the host layout the
// strategies run on, and the collective switch (set_strategy).
#include <string>

#include "base/config.h"
#include "base/log.h"
#include "sched/async_engine.h"
#include "sched/communicator.h"
#include "sched/op_kind.h"

namespace kf {

Strategy strategy_from_knobs() {
  const std::string text = knob_string(Knob::KF_STRATEGY);
  Strategy s = Strategy::kAuto;
  if (!parse_strategy(text, &s)) {
    KF_LOG_WARN("KF_STRATEGY=" + text + " is not auto, flat, hier, tree or multi-tree; using auto");
  }
  return s;
}

StrategyOptions strategy_options_from_knobs() {
  StrategyOptions o;
  const int64_t threshold = knob_int(Knob::KF_HIER_THRESHOLD_BYTES);
  if (threshold >= 0) o.hier_threshold_bytes = static_cast<size_t>(threshold);
  o.hier_slice_bytes = static_cast<size_t>(knob_positive(Knob::KF_HIER_SLICE_BYTES));
  return o;
}

const HostLayout& Communicator::host_layout() {
  // topology_ is complete once create() returned, and never changes.
  // (The flag first: std::call_once costs two thread-local writes and a
  // call each time, and every submission asks.)
  if (!layout_ready_.load(std::memory_order_acquire)) {
    std::call_once(layout_once_, [this] {
      layout_ = HostLayout::from_topology(topology_);
      layout_ready_.store(true, std::memory_order_release);
    });
  }
  return layout_;
}

void Communicator::apply_strategy(AsyncOpSpec* spec) {
  if (spec->kind != kAllReduce && spec->kind != kBroadcast && spec->kind != kAllGather) return;
  spec->strategy = strategy_.load();
  spec->hosts = &host_layout();
  spec->strategy_opts = strategy_opts_;
}

Status Communicator::set_strategy(int requested) {
  const bool valid = requested >= 0 && requested < kStrategyCount;
  const int32_t mine = valid ? requested : -1;
  // One all_reduce gives both extremes: max of (v, -v) is (max, -min).
  int32_t in[2] = {mine, -mine};
  int32_t out[2] = {0, 0};
  OpSignature sig;
  sig.kind = 0xfffd;  // not a collective kind: a private operation
  sig.count = 2;
  KF_RETURN_IF_ERROR(run_blocking("kf.set_strategy", sig, [&](Peers& p) {
    return kf::all_reduce(p, algo_, in, out, 2, KF_INT32, KF_MAX);
  }));
  const int hi = out[0];
  const int lo = -out[1];
  const std::string kept = std::string("; the strategy stays ") + strategy_name(strategy());
  if (!valid) {
    return invalid_argument("kf_comm_set_strategy: " + std::to_string(requested) +
                            " is not a kf_strategy_t value" + kept);
  }
  if (lo != hi) {
    return invalid_usage("kf_comm_set_strategy: the ranks passed different strategies (from " +
                         std::to_string(lo) + " to " + std::to_string(hi) +
                         ", -1 = an invalid value)" + kept);
  }
  strategy_.store(mine);
  KF_LOG_INFO("communicator '" + opts_.name + "': strategy " +
              strategy_name(static_cast<Strategy>(mine)));
  return Status::ok();
}

}  // namespace kf
