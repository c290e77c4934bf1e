#include "base/pointer_set.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

namespace kf {
namespace {

TEST(PointerSet, InsertsFindsAndErases) {
  PointerSet<int> set;
  int a = 0, b = 0;
  EXPECT_FALSE(set.contains(nullptr));
  EXPECT_FALSE(set.contains(reinterpret_cast<int*>(1)));  // (the tombstone's value)
  EXPECT_FALSE(set.erase(reinterpret_cast<int*>(1)));
  EXPECT_FALSE(set.contains(&a));
  EXPECT_TRUE(set.insert(&a));
  EXPECT_FALSE(set.insert(&a));  // a member already
  EXPECT_TRUE(set.contains(&a));
  EXPECT_FALSE(set.contains(&b));
  EXPECT_TRUE(set.erase(&a));
  EXPECT_FALSE(set.erase(&a));
  EXPECT_FALSE(set.contains(&a));
}

// Past half the slots members go to the overflow set; erasures leave
// tombstones that later insertions reuse. Every member stays found and
// every erased one gone, through many rounds.
TEST(PointerSet, KeepsEveryMemberThroughOverflowAndTombstones) {
  PointerSet<int> set;
  const size_t n = PointerSet<int>::kSlots + 100;
  std::vector<int> objs(n);
  for (int round = 0; round < 5; ++round) {
    for (size_t i = 0; i < n; ++i) ASSERT_TRUE(set.insert(&objs[i]));
    for (size_t i = 0; i < n; ++i) ASSERT_TRUE(set.contains(&objs[i])) << i;
    for (size_t i = 0; i < n; i += 2) ASSERT_TRUE(set.erase(&objs[i]));
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(set.contains(&objs[i]), i % 2 == 1) << i;
    for (size_t i = 1; i < n; i += 2) ASSERT_TRUE(set.erase(&objs[i]));
    for (size_t i = 0; i < n; ++i) ASSERT_FALSE(set.contains(&objs[i])) << i;
  }
}

// Erasing every member clears the tombstones, and a value 1 is never taken
// for a member whatever the table holds. erase_if refuses when told to.
TEST(PointerSet, ErasesIfAskedAndClearsTombstones) {
  PointerSet<int> set;
  std::vector<int> objs(PointerSet<int>::kSlots / 2);
  for (int round = 0; round < 4; ++round) {
    for (auto& x : objs) set.insert_new(&x);
    EXPECT_FALSE(set.contains(reinterpret_cast<int*>(1)));
    for (auto& x : objs) {
      EXPECT_EQ(set.erase_if(&x, [](int*) { return false; }), PointerSet<int>::Erased::kRefused);
      EXPECT_EQ(set.erase_if(&x, [](int*) { return true; }), PointerSet<int>::Erased::kYes);
      EXPECT_EQ(set.erase_if(&x, [](int*) { return true; }), PointerSet<int>::Erased::kNotMember);
      EXPECT_FALSE(set.contains(reinterpret_cast<int*>(1)));
    }
  }
}

// Runs `read` over and over on `readers` threads while `write` runs on
// this one (for ThreadSanitizer).
template <typename Read, typename Write>
void race(int readers, Read read, Write write) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < readers; ++t) {
    threads.emplace_back([&] {
      while (!stop.load()) read();
    });
  }
  write();
  stop.store(true);
  for (auto& th : threads) th.join();
}

// Lookups on several threads while one inserts and erases: a member that
// stays is always found.
TEST(PointerSet, LookupsRaceUpdates) {
  PointerSet<int> set;
  // (Together past half the slots: the overflow set races too.)
  std::vector<int> stay(64), churn(PointerSet<int>::kSlots / 2);
  for (auto& x : stay) set.insert(&x);
  std::atomic<int> misses{0};
  race(
      3,
      [&] {
        for (auto& x : stay) {
          if (!set.contains(&x)) misses.fetch_add(1);
        }
        for (auto& x : churn) (void)set.contains(&x);
      },
      [&] {
        for (int round = 0; round < 200; ++round) {
          for (auto& x : churn) set.insert(&x);
          for (auto& x : churn) set.erase(&x);
        }
      });
  EXPECT_EQ(misses.load(), 0);
}

// Rounds that empty the table, so that it clears its tombstones while
// other threads probe it: a non-member is never found, and the writer
// always finds its members.
TEST(PointerSet, ClearingRacesLookups) {
  PointerSet<int> set;
  std::vector<int> churn(PointerSet<int>::kSlots / 2);
  int outsider = 0;
  std::atomic<int> wrong{0};
  race(
      2,
      [&] {
        if (set.contains(&outsider)) wrong.fetch_add(1);
        for (auto& x : churn) (void)set.contains(&x);
      },
      [&] {
        for (int round = 0; round < 100; ++round) {
          for (auto& x : churn) set.insert_new(&x);
          for (auto& x : churn) {
            if (!set.contains(&x)) wrong.fetch_add(1);
          }
          for (auto& x : churn) set.erase(&x);  // the last erasure clears the tombstones
        }
      });
  EXPECT_EQ(wrong.load(), 0);
}

}  // namespace
}  // namespace kf
