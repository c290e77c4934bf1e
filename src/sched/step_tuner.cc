#include "sched/step_tuner.h"

#include <string>

#include "base/log.h"

namespace kf {

TunerConfig StepTuner::config() {
  TunerConfig c;
  // Partitions from 256 KiB (below that, per-partition costs dominate) to
  // 64 MiB; credit from 1 MiB to 256 MiB.
  c.min_partition = 256u << 10;
  c.max_partition = 64u << 20;
  c.min_credit = 1u << 20;
  c.max_credit = 256u << 20;
  c.samples_per_point = 3;  // median of three steps per point
  c.skip_windows = 1;       // the step after a switch still runs old partitions
  return c;
}

StepTuner::StepTuner(bool enabled, TuneParams start, std::function<Status(double*)> agree_max,
                     std::function<void(const TuneParams&)> apply)
    : enabled_(enabled), agree_max_(std::move(agree_max)), apply_(std::move(apply)),
      tuner_(config(), start) {}

Status StepTuner::step() {
  if (!enabled_) return Status::ok();
  const auto now = std::chrono::steady_clock::now();
  double secs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!started_) {
      started_ = true;
      last_ = now;
      return Status::ok();
    }
    secs = std::chrono::duration<double>(now - last_).count();
    last_ = now;
  }
  return step_took(secs);
}

Status StepTuner::step_took(double seconds) {
  if (!enabled_) return Status::ok();
  std::lock_guard<std::mutex> lock(mu_);
  double agreed = seconds;
  Status s = agree_max_(&agreed);
  if (!s.is_ok()) return s;
  const TuneParams before = tuner_.current();
  const TuneParams after = tuner_.observe(1.0, agreed);
  if (after != before) {
    apply_(after);
    KF_LOG_INFO("autotune: partition " + std::to_string(after.partition_bytes) + " B, credit " +
                std::to_string(after.credit_bytes) + " B" +
                (tuner_.phase() == Tuner::Phase::kConverged ? " (converged)" : ""));
  }
  // The clock restarts after the agreement, so its cost is not charged to
  // the next step twice.
  last_ = std::chrono::steady_clock::now();
  return Status::ok();
}

TuneParams StepTuner::current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tuner_.current();
}

Tuner::Phase StepTuner::phase() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tuner_.phase();
}

int StepTuner::searches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tuner_.searches();
}

}  // namespace kf
