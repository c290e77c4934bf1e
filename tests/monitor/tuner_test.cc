// Online tuner: converges on synthetic throughput surfaces (with noise), keeps
// to its bounds, re-tunes after a drift but not on noise, and takes identical
// decisions when fed identical samples (the agreement protocol).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "sched/tuner.h"

namespace {

using kf::TuneParams;
using kf::Tuner;
using kf::TunerConfig;

// A unimodal throughput surface over log2(partition), log2(credit): peak
// `peak` bytes/s at (pe, ce), falling off quadratically in the exponents.
struct Surface {
  double pe, ce, peak;
  double operator()(const TuneParams& p) const {
    const double dp = std::log2(static_cast<double>(p.partition_bytes)) - pe;
    const double dc = std::log2(static_cast<double>(p.credit_bytes)) - ce;
    return peak / (1.0 + 0.08 * dp * dp + 0.05 * dc * dc);
  }
};

// Runs `windows` windows of 1 GB each against `surface` with multiplicative
// noise of +-`noise`; returns the number of windows until convergence (or -1).
int run(Tuner& t, const Surface& surface, double noise, int windows, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(1.0 - noise, 1.0 + noise);
  int converged_at = -1;
  for (int w = 0; w < windows; ++w) {
    const double thr = surface(t.current()) * u(rng);
    t.observe(1e9, 1e9 / thr);
    if (t.phase() == Tuner::Phase::kConverged && converged_at < 0) converged_at = w + 1;
  }
  return converged_at;
}

int log2u(uint64_t v) { return static_cast<int>(std::lround(std::log2(static_cast<double>(v)))); }

TEST(Tuner, ConvergesToOptimumWithoutNoise) {
  Tuner t(TunerConfig{}, TuneParams{1 << 20, 4 << 20});
  std::mt19937 rng(1);
  const Surface s{22, 24, 1e9};  // 4 MiB partition, 16 MiB credit
  const int at = run(t, s, 0.0, 300, rng);
  ASSERT_GT(at, 0);
  EXPECT_LE(at, 120);
  EXPECT_EQ(t.current().partition_bytes, 4u << 20);
  EXPECT_EQ(t.current().credit_bytes, 16u << 20);
  EXPECT_EQ(t.searches(), 1);
  EXPECT_NEAR(t.reference(), 1e9, 1e3);
}

TEST(Tuner, RobustToNoise) {
  // With +-10% noise the choice lands within a factor of two of the optimum
  // on each axis, for every seed.
  for (unsigned seed = 1; seed <= 20; ++seed) {
    TunerConfig c;
    c.samples_per_point = 5;
    Tuner t(c, TuneParams{256 << 10, 1 << 20});
    std::mt19937 rng(seed);
    const Surface s{23, 25, 2e9};
    ASSERT_GT(run(t, s, 0.10, 400, rng), 0) << "seed " << seed;
    EXPECT_LE(std::abs(log2u(t.current().partition_bytes) - 23), 1) << "seed " << seed;
    EXPECT_LE(std::abs(log2u(t.current().credit_bytes) - 25), 1) << "seed " << seed;
  }
}

TEST(Tuner, StaysInsideBoundsAndOnTheGrid) {
  TunerConfig c;
  c.min_partition = 100000;  // rounded up to 2^17
  c.max_partition = 3u << 20;  // rounded down to 2^21
  c.min_credit = 1 << 20;
  c.max_credit = 8 << 20;
  Tuner t(c, TuneParams{1, 1u << 30});
  const Surface s{30, 10, 1e9};  // optimum far outside the box
  std::mt19937 rng(3);
  for (int w = 0; w < 200; ++w) {
    const TuneParams p = t.current();
    EXPECT_GE(p.partition_bytes, 1u << 17);
    EXPECT_LE(p.partition_bytes, 1u << 21);
    EXPECT_GE(p.credit_bytes, 1u << 20);
    EXPECT_LE(p.credit_bytes, 8u << 20);
    EXPECT_EQ(p.partition_bytes & (p.partition_bytes - 1), 0u);
    EXPECT_EQ(p.credit_bytes & (p.credit_bytes - 1), 0u);
    t.observe(1e9, 1e9 / s(p));
  }
  ASSERT_EQ(t.phase(), Tuner::Phase::kConverged);
  EXPECT_EQ(t.current().partition_bytes, 1u << 21);  // the corner nearest the optimum
  EXPECT_EQ(t.current().credit_bytes, 1u << 20);
}

TEST(Tuner, RetunesAfterDriftButNotOnNoise) {
  TunerConfig c;
  Tuner t(c, TuneParams{1 << 20, 4 << 20});
  std::mt19937 rng(7);
  ASSERT_GT(run(t, Surface{20, 22, 1e9}, 0.05, 200, rng), 0);
  EXPECT_EQ(log2u(t.current().partition_bytes), 20);
  // Noise of +-5% around the reference (drift threshold 15%): no re-tuning.
  run(t, Surface{20, 22, 1e9}, 0.05, 200, rng);
  EXPECT_EQ(t.searches(), 1);
  EXPECT_EQ(t.phase(), Tuner::Phase::kConverged);
  // The link slows and its optimum moves: the tuner notices and follows.
  ASSERT_GT(run(t, Surface{24, 26, 4e8}, 0.05, 400, rng), 0);
  EXPECT_EQ(t.searches(), 2);
  EXPECT_EQ(t.phase(), Tuner::Phase::kConverged);
  EXPECT_LE(std::abs(log2u(t.current().partition_bytes) - 24), 1);
  EXPECT_LE(std::abs(log2u(t.current().credit_bytes) - 26), 1);
}

TEST(Tuner, OneOutlierWindowDoesNotRetune) {
  Tuner t(TunerConfig{}, TuneParams{1 << 20, 4 << 20});
  std::mt19937 rng(9);
  const Surface s{20, 22, 1e9};
  ASSERT_GT(run(t, s, 0.0, 200, rng), 0);
  for (int i = 0; i < 50; ++i) {
    const double thr = (i % 3 == 0) ? s(t.current()) * 0.3 : s(t.current());
    t.observe(1e9, 1e9 / thr);
  }
  EXPECT_EQ(t.searches(), 1);
}

TEST(Tuner, IdenticalSamplesGiveIdenticalDecisions) {
  // The agreement protocol: every rank feeds the all-reduced (max) window
  // time, so every rank's tuner sees the same sequence and must decide alike.
  Tuner a(TunerConfig{}, TuneParams{1 << 20, 4 << 20});
  Tuner b(TunerConfig{}, TuneParams{1 << 20, 4 << 20});
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(0.8, 1.2);
  const Surface s{21, 23, 1e9};
  for (int w = 0; w < 500; ++w) {
    ASSERT_EQ(a.current(), b.current()) << "window " << w;
    const double secs = 1e9 / (s(a.current()) * u(rng));
    const TuneParams pa = a.observe(1e9, secs);
    const TuneParams pb = b.observe(1e9, secs);
    ASSERT_EQ(pa, pb);
  }
}

TEST(Tuner, IgnoresInvalidSamplesAndSkipsTransients) {
  TunerConfig c;
  c.samples_per_point = 1;
  c.skip_windows = 2;
  Tuner t(c, TuneParams{1 << 20, 4 << 20});
  const TuneParams start = t.current();
  t.observe(1e9, 0);
  t.observe(1e9, -1);
  t.observe(std::nan(""), 1);
  t.observe(1e9, INFINITY);
  EXPECT_EQ(t.points_measured(), 0);
  EXPECT_EQ(t.current(), start);
  t.observe(1e9, 1);  // scores the start point, switches to a neighbour
  EXPECT_EQ(t.points_measured(), 1);
  const TuneParams next = t.current();
  EXPECT_NE(next, start);
  t.observe(1e9, 100);  // skipped: transient after the switch
  t.observe(1e9, 100);  // skipped
  EXPECT_EQ(t.points_measured(), 1);
  t.observe(1e9, 1);
  EXPECT_EQ(t.points_measured(), 2);
}

TEST(Tuner, PointCapEndsTheSearchAtTheBestSoFar) {
  TunerConfig c;
  c.max_points = 3;
  c.samples_per_point = 1;
  Tuner t(c, TuneParams{1 << 20, 4 << 20});
  const Surface s{26, 28, 1e9};
  for (int w = 0; w < 10 && t.phase() == Tuner::Phase::kSearching; ++w)
    t.observe(1e9, 1e9 / s(t.current()));
  EXPECT_EQ(t.phase(), Tuner::Phase::kConverged);
  EXPECT_EQ(t.points_measured(), 3);
}

TEST(Tuner, BestIsTheBestMeasuredPointWhileSearching) {
  TunerConfig c;
  c.samples_per_point = 1;
  Tuner t(c, TuneParams{1 << 20, 4 << 20});
  EXPECT_EQ(t.best(), t.current());  // nothing measured yet
  const Surface s{18, 22, 1e9};      // smaller partitions are better
  std::vector<std::pair<TuneParams, double>> seen;
  for (int w = 0; w < 3; ++w) {
    seen.push_back({t.current(), s(t.current())});
    t.observe(1e9, 1e9 / s(t.current()));
  }
  ASSERT_EQ(t.phase(), Tuner::Phase::kSearching);
  auto best = seen.front();
  for (const auto& p : seen) if (p.second > best.second) best = p;
  EXPECT_EQ(t.best(), best.first);
}

TEST(Tuner, KnobSwitchesItOnAndOff) {
  unsetenv("KF_AUTOTUNE");
  EXPECT_FALSE(Tuner::enabled_from_env());
  setenv("KF_AUTOTUNE", "1", 1);
  EXPECT_TRUE(Tuner::enabled_from_env());
  setenv("KF_AUTOTUNE", "0", 1);
  EXPECT_FALSE(Tuner::enabled_from_env());
  unsetenv("KF_AUTOTUNE");
}

}  // namespace
