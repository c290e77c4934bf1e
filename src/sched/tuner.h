// Online tuner of the scheduler's two knobs, partition size and credit, from
// measured throughput. Pure logic: it is fed one sample per window (bytes
// moved, seconds taken) and answers with the parameters for the next window.
//
// Search: a compass (pattern) search on a log2 grid. Both parameters are
// powers of two inside configured bounds. Around the current centre the
// tuner measures the neighbours at +-step along each axis; it moves to the
// best one when that one beats the centre by more than `min_gain`, else it
// halves the step; when the step would drop below one (a factor of two) the
// search has converged. Every point is scored by the median throughput of
// `samples_per_point` windows, so one noisy window cannot steer the search,
// and points already measured in this search are not measured again. This is
// robust to noise and needs no model, unlike ByteScheduler's Bayesian
// optimisation, at a similar cost (it typically converges in 10-20 points).
//
// Drift: once converged the tuner keeps the reference throughput of its
// choice. When `drift_windows` consecutive windows all differ from it by more
// than `drift` (relative, all in the same direction), the conditions have
// changed (another job on the link, a different model phase) and the search
// starts again from the current choice.
//
// Agreement across ranks. Every decision is a deterministic function of the
// sequence of samples fed in (integer exponents; comparisons of doubles that
// are bit-identical on every rank). So ranks take identical decisions when
// they feed identical samples. The protocol: at the end of each window
// (a training step, or a fixed number of completed operations) every rank
// all-reduces its window's (bytes, seconds) with MAX -- the slowest rank
// defines the step time -- and feeds the result. Since all ranks then hold
// the same sequence, they switch to the same parameters at the same window
// boundary, which is what chunking needs (a partition size must be the same
// on every rank for a given operation). Where binaries might differ (mixed
// builds), rank 0 may instead broadcast its decision; both are one tiny
// collective per window. The tuner itself never communicates.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

namespace kf {

struct TuneParams {
  uint64_t partition_bytes = 0;
  uint64_t credit_bytes = 0;
  bool operator==(const TuneParams& o) const {
    return partition_bytes == o.partition_bytes && credit_bytes == o.credit_bytes;
  }
  bool operator!=(const TuneParams& o) const { return !(*this == o); }
};

struct TunerConfig {
  // Bounds, rounded to powers of two (min up, max down).
  uint64_t min_partition = 64u << 10;
  uint64_t max_partition = 64u << 20;
  uint64_t min_credit = 256u << 10;
  uint64_t max_credit = 256u << 20;
  int samples_per_point = 3;  // windows measured per point; its score is their median
  int skip_windows = 0;       // windows ignored after each switch (transients)
  int initial_step = 2;       // first step, in powers of two (2 = a factor of 4)
  double min_gain = 0.03;     // a neighbour must beat the centre by this much to move
  int max_points = 40;        // cap on distinct points per search; then the best so far
  double drift = 0.15;        // relative change of throughput that triggers re-tuning
  int drift_windows = 3;      // consecutive windows beyond `drift` needed
};

class Tuner {
 public:
  enum class Phase { kSearching, kConverged };

  // `start` is rounded to the grid and clamped into the bounds.
  Tuner(const TunerConfig& config, TuneParams start);

  // Feeds one window: `bytes` moved in `seconds` (identical on every rank,
  // see above). Samples with seconds <= 0 or non-finite values are ignored.
  // Returns the parameters to use from the next window on.
  TuneParams observe(double bytes, double seconds);

  TuneParams current() const { return to_params(current_); }
  // The best point measured so far in this search (current() when none is):
  // what to keep when the caller stops a search early.
  TuneParams best() const;
  Phase phase() const { return phase_; }
  // Searches started so far (1 + re-tunings).
  int searches() const { return searches_; }
  // Throughput (bytes/s) of the converged choice; 0 while searching.
  double reference() const { return reference_; }
  // Distinct points measured in the current or last search.
  int points_measured() const { return static_cast<int>(scores_.size()); }

  // KF_AUTOTUNE: true when set to 1.
  static bool enabled_from_env();

 private:
  using Point = std::pair<int, int>;  // log2(partition), log2(credit)

  TuneParams to_params(Point p) const;
  bool valid(Point p) const;
  // Picks the next point to measure, moving / shrinking / converging as the
  // scores so far allow.
  void advance();
  void start_search();
  void converge(Point p);

  TunerConfig cfg_;
  int lo_[2], hi_[2];  // bounds of the two exponents

  Phase phase_ = Phase::kSearching;
  int searches_ = 0;
  Point centre_;
  int step_ = 1;
  Point current_;                       // being measured (searching) or chosen (converged)
  std::vector<double> window_samples_;  // of current_, while searching
  int skip_left_ = 0;
  std::map<Point, double> scores_;  // median throughput of measured points, this search

  double reference_ = 0;
  int drift_count_ = 0;
  int drift_sign_ = 0;
};

}  // namespace kf
