// StepTuner: off costs nothing and never communicates; on, every step is
// agreed (MAX over ranks) before the tuner sees it, decisions are applied
// when they change, ranks fed the same agreed times decide alike, and a
// failed agreement is returned, not swallowed.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "sched/step_tuner.h"

namespace {

using kf::Status;
using kf::StepTuner;
using kf::TuneParams;

TEST(StepTuner, OffNeverAgreesOrApplies) {
  int agrees = 0, applies = 0;
  StepTuner t(false, TuneParams{4 << 20, 16 << 20},
              [&](double*) { ++agrees; return Status::ok(); },
              [&](const TuneParams&) { ++applies; });
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(t.step().is_ok());
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(t.step_took(1.0).is_ok());
  EXPECT_EQ(agrees, 0);
  EXPECT_EQ(applies, 0);
  EXPECT_FALSE(t.enabled());
}

// Two "ranks" whose step times differ; the agreement hands both the max.
TEST(StepTuner, RanksFedTheAgreedTimeDecideAlike) {
  std::vector<TuneParams> applied[2];
  double pending[2] = {0, 0};
  auto make = [&](int r) {
    return StepTuner(
        true, TuneParams{4 << 20, 16 << 20},
        [&, r](double* v) {
          pending[r] = *v;
          return Status::ok();
        },
        [&, r](const TuneParams& p) { applied[r].push_back(p); });
  };
  StepTuner a = make(0), b = make(1);
  // Step time: a bowl in log2(partition) around 1 MiB, plus rank skew.
  auto step_time = [](const TuneParams& p, int r) {
    const double d = std::log2(static_cast<double>(p.partition_bytes)) - 20;
    return 0.1 * (1 + 0.05 * d * d) * (r == 0 ? 1.0 : 1.02);
  };
  for (int s = 0; s < 200; ++s) {
    ASSERT_EQ(a.current(), b.current());
    // Simulate the all-reduce: each rank's agree sees the max of both.
    const double ta = step_time(a.current(), 0), tb = step_time(b.current(), 1);
    const double m = std::max(ta, tb);
    StepTuner* ts[2] = {&a, &b};
    for (StepTuner* t : ts) ASSERT_TRUE(t->step_took(m).is_ok());
  }
  EXPECT_EQ(applied[0].size(), applied[1].size());
  for (size_t i = 0; i < applied[0].size(); ++i) EXPECT_EQ(applied[0][i], applied[1][i]);
  EXPECT_FALSE(applied[0].empty());
  EXPECT_EQ(a.phase(), kf::Tuner::Phase::kConverged);
  EXPECT_EQ(a.current().partition_bytes, 1u << 20);
}

TEST(StepTuner, AgreedValueIsWhatTheTunerSees) {
  // The agreement raises the time: the tuner must use the agreed value.
  std::vector<TuneParams> seen;
  StepTuner t(true, TuneParams{4 << 20, 16 << 20},
              [](double* v) {
                *v = 2.0;
                return Status::ok();
              },
              [&](const TuneParams& p) { seen.push_back(p); });
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(t.step_took(0.001 * (i % 7 + 1)).is_ok());
  // Constant agreed time: no neighbour beats the start point; converges there.
  EXPECT_EQ(t.phase(), kf::Tuner::Phase::kConverged);
  EXPECT_EQ(t.current(), (TuneParams{4 << 20, 16 << 20}));
  EXPECT_EQ(t.searches(), 1);
}

TEST(StepTuner, FailedAgreementIsReturned) {
  int applies = 0;
  StepTuner t(true, TuneParams{4 << 20, 16 << 20},
              [](double*) { return kf::remote_error("lost rank 1"); },
              [&](const TuneParams&) { ++applies; });
  const Status s = t.step_took(1.0);
  EXPECT_EQ(s.code(), KF_ERR_REMOTE);
  EXPECT_EQ(applies, 0);
  EXPECT_TRUE(t.step().is_ok());  // the first wall-clock step only starts the clock
  EXPECT_EQ(t.step().code(), KF_ERR_REMOTE);
}

}  // namespace
