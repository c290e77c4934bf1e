// StepTuner: the online tuner (sched/tuner.h) wired to one communicator. The
// application marks the end of each training step (kf_comm_step); with
// KF_AUTOTUNE=1 the step time is agreed across ranks (all-reduce MAX, so
// every rank feeds the same sample) and fed to the tuner, whose choice of
// partition size and credit is applied to the async engine at once. Every
// rank calls kf_comm_step at the same point of its sequence of kf_i*
// submissions, so a new partition size applies to the same operations on
// every rank (it is part of their signature). Scored by step time, as
// ByteScheduler does: throughput = steps per second.
#pragma once

#include <chrono>
#include <functional>
#include <mutex>

#include "base/status.h"
#include "sched/tuner.h"

namespace kf {

class StepTuner {
 public:
  // `agree_max` replaces *value by the maximum over all ranks (collective);
  // `apply` installs new parameters. `start` are the parameters in use.
  StepTuner(bool enabled, TuneParams start, std::function<Status(double*)> agree_max,
            std::function<void(const TuneParams&)> apply);

  // Ends a step measured by the wall clock (the first call only starts the
  // clock). A no-op returning OK when disabled.
  Status step();
  // Ends a step that took `seconds` on this rank (tests; step() uses it).
  Status step_took(double seconds);

  bool enabled() const { return enabled_; }
  TuneParams current() const;
  Tuner::Phase phase() const;
  int searches() const;

  static TunerConfig config();

 private:
  const bool enabled_;
  const std::function<Status(double*)> agree_max_;
  const std::function<void(const TuneParams&)> apply_;
  mutable std::mutex mu_;  // one step at a time; guards everything below
  Tuner tuner_;
  bool started_ = false;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace kf
