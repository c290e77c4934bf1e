#include "sched/credit_window.h"

#include <gtest/gtest.h>

namespace kf {
namespace {

constexpr uint64_t kMiB = 1 << 20;

InFlight running(uint64_t bytes, uint32_t count, bool equal) {
  InFlight f;
  f.bytes = bytes;
  f.count = count;
  f.equal = equal;
  return f;
}

TEST(CreditWindow, AlwaysAdmitsWhenNothingRuns) {
  EXPECT_TRUE(credit_admits(InFlight{}, 64 * kMiB, 1));
  EXPECT_TRUE(credit_admits(running(0, 0, false), 64 * kMiB, 1));
}

TEST(CreditWindow, MixedPrioritiesStayWithinTheCredit) {
  EXPECT_TRUE(credit_admits(running(512 * 1024, 1, false), 512 * 1024, kMiB));
  EXPECT_FALSE(credit_admits(running(512 * 1024, 1, false), 512 * 1024 + 1, kMiB));
  EXPECT_FALSE(credit_admits(running(kMiB, 1, false), kMiB, kMiB));
  EXPECT_FALSE(credit_admits(running(4 * kMiB, 1, false), 4 * kMiB, kMiB));
}

TEST(CreditWindow, EqualPrioritiesOverlapUpToTwiceTheCredit) {
  // 1 MiB operations under 1 MiB of credit: two run at once, not a third.
  EXPECT_TRUE(credit_admits(running(kMiB, 1, true), kMiB, kMiB));
  EXPECT_FALSE(credit_admits(running(2 * kMiB, 2, true), kMiB, kMiB));
  // 512 KiB operations: four (2 MiB = 2 x 1 MiB).
  EXPECT_TRUE(credit_admits(running(3 * 512 * 1024, 3, true), 512 * 1024, kMiB));
  // Two 2 MiB operations, not a third (6 MiB > 2 x 1 MiB).
  EXPECT_TRUE(credit_admits(running(2 * kMiB, 1, true), 2 * kMiB, kMiB));
  EXPECT_FALSE(credit_admits(running(4 * kMiB, 2, true), 2 * kMiB, kMiB));
}

TEST(CreditWindow, EqualPrioritiesAlwaysLetTwoRun) {
  // A partition larger than the widened window still overlaps one other.
  EXPECT_TRUE(credit_admits(running(16 * kMiB, 1, true), 16 * kMiB, kMiB));
  EXPECT_FALSE(credit_admits(running(32 * kMiB, 2, true), 16 * kMiB, kMiB));
}

TEST(CreditWindow, EqualPrioritiesRunAtMostFourBeyondTheCredit) {
  // Small operations: the plain credit admits many, the wider window none more.
  EXPECT_TRUE(credit_admits(running(15 * 64 * 1024, 15, true), 64 * 1024, kMiB));
  EXPECT_FALSE(credit_admits(running(kMiB, 4, true), 64 * 1024, kMiB));
}

TEST(CreditWindow, NeverMoreThanMaxCredited) {
  EXPECT_FALSE(credit_admits(running(kMaxCredited, kMaxCredited, false), 1, kMiB));
  EXPECT_FALSE(credit_admits(running(kMaxCredited, kMaxCredited, true), 1, kMiB));
  EXPECT_TRUE(credit_admits(running(kMaxCredited - 1, kMaxCredited - 1, false), 1, kMiB));
}

}  // namespace
}  // namespace kf
