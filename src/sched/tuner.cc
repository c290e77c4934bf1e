#include "sched/tuner.h"

#include <algorithm>
#include <cmath>

#include "base/config.h"

namespace kf {
namespace {

int floor_log2(uint64_t v) {
  int e = 0;
  while (v > 1) v >>= 1, ++e;
  return e;
}

int ceil_log2(uint64_t v) {
  const int e = floor_log2(v);
  return (uint64_t{1} << e) < v ? e + 1 : e;
}

int nearest_log2(uint64_t v) {
  if (v <= 1) return 0;
  const int e = floor_log2(v);
  // Between 2^e and 2^(e+1): nearer on a log scale means above 2^e * sqrt(2).
  return static_cast<double>(v) > std::ldexp(std::sqrt(2.0), e) ? e + 1 : e;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

bool Tuner::enabled_from_env() { return knob_int(Knob::KF_AUTOTUNE) == 1; }

Tuner::Tuner(const TunerConfig& config, TuneParams start) : cfg_(config) {
  cfg_.samples_per_point = std::max(1, cfg_.samples_per_point);
  cfg_.skip_windows = std::max(0, cfg_.skip_windows);
  cfg_.initial_step = std::max(1, cfg_.initial_step);
  cfg_.max_points = std::max(1, cfg_.max_points);
  cfg_.drift_windows = std::max(1, cfg_.drift_windows);
  lo_[0] = ceil_log2(std::max<uint64_t>(1, cfg_.min_partition));
  hi_[0] = std::max(lo_[0], floor_log2(std::max<uint64_t>(1, cfg_.max_partition)));
  lo_[1] = ceil_log2(std::max<uint64_t>(1, cfg_.min_credit));
  hi_[1] = std::max(lo_[1], floor_log2(std::max<uint64_t>(1, cfg_.max_credit)));
  centre_ = {std::clamp(nearest_log2(start.partition_bytes), lo_[0], hi_[0]),
             std::clamp(nearest_log2(start.credit_bytes), lo_[1], hi_[1])};
  current_ = centre_;
  start_search();
}

TuneParams Tuner::to_params(Point p) const {
  return TuneParams{uint64_t{1} << p.first, uint64_t{1} << p.second};
}

TuneParams Tuner::best() const {
  if (phase_ == Phase::kConverged || scores_.empty()) return current();
  auto it = std::max_element(scores_.begin(), scores_.end(),
                             [](const auto& a, const auto& b) { return a.second < b.second; });
  return to_params(it->first);
}

bool Tuner::valid(Point p) const {
  return p.first >= lo_[0] && p.first <= hi_[0] && p.second >= lo_[1] && p.second <= hi_[1];
}

void Tuner::start_search() {
  ++searches_;
  phase_ = Phase::kSearching;
  scores_.clear();
  step_ = cfg_.initial_step;
  reference_ = 0;
  drift_count_ = 0;
  drift_sign_ = 0;
  current_ = centre_;
  window_samples_.clear();
  skip_left_ = 0;  // the centre is what runs now: no switch, no transient
}

void Tuner::converge(Point p) {
  phase_ = Phase::kConverged;
  centre_ = p;
  current_ = p;
  reference_ = scores_.count(p) ? scores_.at(p) : 0;
  drift_count_ = 0;
  drift_sign_ = 0;
  skip_left_ = 0;
}

void Tuner::advance() {
  for (;;) {
    if (!scores_.count(centre_)) {
      current_ = centre_;
      return;
    }
    if (static_cast<int>(scores_.size()) >= cfg_.max_points) {
      auto best = std::max_element(scores_.begin(), scores_.end(),
                                   [](const auto& a, const auto& b) { return a.second < b.second; });
      converge(best->first);
      return;
    }
    // The poll set: +-step along each axis, inside the bounds. Clamping to
    // the bound keeps an edge reachable when the step overshoots it.
    std::vector<Point> poll;
    for (int axis = 0; axis < 2; ++axis) {
      for (int dir : {-1, 1}) {
        Point p = centre_;
        int& coord = axis == 0 ? p.first : p.second;
        coord = std::clamp(coord + dir * step_, lo_[axis], hi_[axis]);
        if (p != centre_ && std::find(poll.begin(), poll.end(), p) == poll.end()) poll.push_back(p);
      }
    }
    for (const Point& p : poll) {
      if (!scores_.count(p)) {
        current_ = p;
        return;
      }
    }
    const double centre_score = scores_.at(centre_);
    Point best = centre_;
    double best_score = centre_score;
    for (const Point& p : poll) {
      if (scores_.at(p) > best_score) best = p, best_score = scores_.at(p);
    }
    if (best != centre_ && best_score > centre_score * (1.0 + cfg_.min_gain)) {
      centre_ = best;  // move, keep the step
      continue;
    }
    if (step_ > 1) {
      step_ /= 2;
      continue;
    }
    converge(centre_);
    return;
  }
}

TuneParams Tuner::observe(double bytes, double seconds) {
  if (!(seconds > 0) || !std::isfinite(seconds) || !std::isfinite(bytes) || bytes < 0) {
    return current();
  }
  const double thr = bytes / seconds;
  if (skip_left_ > 0) {
    --skip_left_;
    return current();
  }
  if (phase_ == Phase::kConverged) {
    const double rel = reference_ > 0 ? thr / reference_ - 1.0 : 0.0;
    const int sign = rel > cfg_.drift ? 1 : (rel < -cfg_.drift ? -1 : 0);
    if (sign != 0 && (drift_count_ == 0 || sign == drift_sign_)) {
      drift_sign_ = sign;
      if (++drift_count_ >= cfg_.drift_windows) start_search();
    } else {
      drift_count_ = sign != 0 ? 1 : 0;
      drift_sign_ = sign;
    }
    return current();
  }
  window_samples_.push_back(thr);
  if (static_cast<int>(window_samples_.size()) < cfg_.samples_per_point) return current();
  scores_[current_] = median(window_samples_);
  window_samples_.clear();
  const Point before = current_;
  advance();
  if (current_ != before) skip_left_ = cfg_.skip_windows;
  return current();
}

}  // namespace kf
