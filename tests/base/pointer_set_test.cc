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

// Members that find no free slot near their home go to the overflow set;
// erasures leave tombstones that later insertions reuse. Every member stays
// found and every erased one gone, through many rounds.
TEST(PointerSet, KeepsEveryMemberThroughOverflowAndTombstones) {
  PointerSet<int> set;
  const size_t n = PointerSet<int>::kSlots + 100;  // (more than the table holds)
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

// erase_if refuses when told to, a value 1 is never taken for a member
// whatever the table holds (tombstones included), and a member stays one
// while its erasure's check runs.
TEST(PointerSet, ErasesIfAsked) {
  PointerSet<int> set;
  std::vector<int> objs(PointerSet<int>::kSlots / 2);
  for (int round = 0; round < 4; ++round) {
    for (auto& x : objs) set.insert_new(&x);
    EXPECT_FALSE(set.contains(reinterpret_cast<int*>(1)));
    for (auto& x : objs) {
      EXPECT_EQ(set.erase_if(&x, [](int*) { return false; }), PointerSet<int>::Erased::kRefused);
      EXPECT_TRUE(set.contains(&x));
      EXPECT_EQ(set.erase_if(&x,
                             [&](int* p) {
                               EXPECT_TRUE(set.contains(p));  // (claimed, still a member)
                               return true;
                             }),
                PointerSet<int>::Erased::kYes);
      EXPECT_EQ(set.erase_if(&x, [](int*) { return true; }), PointerSet<int>::Erased::kNotMember);
      EXPECT_FALSE(set.contains(&x));
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
  PointerSet<int, 64> set;  // (small: probes wrap around the table)
  // (Together more than the table holds: the overflow set races too.)
  std::vector<int> stay(16), churn(96);
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

// Rounds that fill and empty the table (insertions and erasures without
// the lock) while other threads probe it: a non-member is never found, and
// the writer always finds its members.
TEST(PointerSet, ChurnRacesLookups) {
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
          for (auto& x : churn) set.erase(&x);
        }
      });
  EXPECT_EQ(wrong.load(), 0);
}

// A member in the overflow set is erased only if asked, as one in the
// table is.
TEST(PointerSet, ErasesOverflowMembersIfAsked) {
  using Set = PointerSet<int, 8>;
  Set set;
  std::vector<int> objs(24);  // (three times the table)
  for (auto& x : objs) set.insert_new(&x);
  for (auto& x : objs) {
    EXPECT_TRUE(set.contains(&x));
    EXPECT_EQ(set.erase_if(&x, [](int*) { return false; }), Set::Erased::kRefused);
    EXPECT_TRUE(set.contains(&x));
  }
  for (auto& x : objs) EXPECT_TRUE(set.erase(&x));
  for (auto& x : objs) EXPECT_FALSE(set.contains(&x));
}

// Threads refuse and erase the same members of a small table (some in the
// overflow set) at once, while they insert and erase their own: the checks
// of one member never run at once, each member is erased exactly once per
// round, and no thread's own members are disturbed.
TEST(PointerSet, ErasuresOfOneMemberAreExclusive) {
  constexpr int kThreads = 3, kRounds = 200, kShared = 24;
  using Set = PointerSet<int, 16>;
  Set set;
  std::vector<int> shared(kShared);
  std::vector<std::atomic<int>> inside(kShared);
  std::vector<std::vector<int>> own(kThreads, std::vector<int>(8));
  std::atomic<int> yes{0}, overlap{0}, wrong{0}, round_go{0}, finished{0};
  auto check = [&](int* p, bool verdict) {
    std::atomic<int>& in = inside[static_cast<size_t>(p - shared.data())];
    if (in.fetch_add(1) != 0) overlap.fetch_add(1);
    std::this_thread::yield();  // (a window for another erasure to try)
    in.fetch_sub(1);
    return verdict;
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        while (round_go.load() <= r) std::this_thread::yield();
        for (auto& x : own[t]) set.insert_new(&x);
        for (int i = 0; i < kShared; ++i) {
          int* p = &shared[static_cast<size_t>((i + 7 * t) % kShared)];
          // Refusals and erasures interleave: the thread whose turn it is
          // erases, the others refuse until the member is gone.
          const bool mine = (i + r) % kThreads == t;
          auto e = set.erase_if(p, [&](int* q) { return check(q, mine); });
          if (e == Set::Erased::kYes) yes.fetch_add(1);
        }
        for (auto& x : shared) {
          if (set.erase_if(&x, [&](int* q) { return check(q, true); }) == Set::Erased::kYes) {
            yes.fetch_add(1);
          }
        }
        for (auto& x : own[t]) {
          if (!set.contains(&x) || !set.erase(&x)) wrong.fetch_add(1);
        }
        finished.fetch_add(1);
      }
    });
  }
  for (int r = 0; r < kRounds; ++r) {
    while (finished.load() < r * kThreads) std::this_thread::yield();
    for (auto& x : shared) EXPECT_TRUE(set.insert(&x));  // (no ASSERT: the threads must be joined)
    round_go.store(r + 1);
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(overlap.load(), 0);
  EXPECT_EQ(yes.load(), kRounds * kShared);
  EXPECT_EQ(wrong.load(), 0);
  for (auto& x : shared) EXPECT_FALSE(set.contains(&x));
}

// Several threads erase the same members at once, and insert their own:
// each member is erased exactly once, a refused erasure leaves it a member,
// and no thread's own members are disturbed.
TEST(PointerSet, ConcurrentErasuresOfOneMember) {
  constexpr int kThreads = 3, kRounds = 300, kShared = 16;
  PointerSet<int> set;
  std::vector<int> shared(kShared);
  std::vector<std::vector<int>> own(kThreads, std::vector<int>(8));
  std::atomic<int> yes{0}, refused{0}, wrong{0}, round_go{0}, at_barrier{0}, finished{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) {
        while (round_go.load() <= r)
          std::this_thread::yield();  // the main thread inserted the shared ones
        for (auto& x : own[t]) set.insert_new(&x);
        for (auto& x : shared) {
          // Odd rounds: refuse first (every thread), then erase.
          if (r % 2 == 1 &&
              set.erase_if(&x, [](int*) { return false; }) == PointerSet<int>::Erased::kRefused) {
            refused.fetch_add(1);
          }
        }
        at_barrier.fetch_add(1);
        while (at_barrier.load() < (r + 1) * kThreads) std::this_thread::yield();
        for (auto& x : shared) {
          if (set.erase(&x)) yes.fetch_add(1);
        }
        for (auto& x : own[t]) {
          if (!set.contains(&x) || !set.erase(&x)) wrong.fetch_add(1);
        }
        finished.fetch_add(1);
      }
    });
  }
  for (int r = 0; r < kRounds; ++r) {
    while (finished.load() < r * kThreads)
      std::this_thread::yield();  // every thread ended the last round
    for (auto& x : shared) EXPECT_TRUE(set.insert(&x));  // (no ASSERT: the threads must be joined)
    round_go.store(r + 1);
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(yes.load(), kRounds * kShared);
  EXPECT_EQ(refused.load(), (kRounds / 2) * kShared * kThreads);
  EXPECT_EQ(wrong.load(), 0);
  for (auto& x : shared) EXPECT_FALSE(set.contains(&x));
}

}  // namespace
}  // namespace kf
