#include "sched/ready_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <tuple>
#include <vector>

namespace kf {
namespace {

struct Op {
  int id;
};

// The queue's items, most urgent first, as (priority, order, id).
std::vector<std::tuple<int32_t, uint64_t, int>> items(const ReadyQueue<Op>& q) {
  std::vector<std::tuple<int32_t, uint64_t, int>> out;
  for (const auto& it : q) out.emplace_back(it.priority, it.order, it.op->id);
  return out;
}

TEST(ReadyQueue, MostUrgentFirstThenSubmissionOrder) {
  std::vector<Op> ops{{0}, {1}, {2}, {3}, {4}};
  ReadyQueue<Op> q;
  EXPECT_TRUE(q.empty());
  q.insert(5, 0, &ops[0]);
  q.insert(1, 1, &ops[1]);
  q.insert(5, 2, &ops[2]);
  q.insert(-3, 3, &ops[3]);
  q.insert(1, 4, &ops[4]);
  using T = std::tuple<int32_t, uint64_t, int>;
  EXPECT_EQ(items(q), (std::vector<T>{{-3, 3, 3}, {1, 1, 1}, {1, 4, 4}, {5, 0, 0}, {5, 2, 2}}));
  EXPECT_EQ(q.begin()->op, &ops[3]);
  EXPECT_TRUE(q.erase(1, 1));
  EXPECT_FALSE(q.erase(1, 1));  // gone already
  EXPECT_FALSE(q.erase(5, 4));  // no such key (a priority and an order that are not one item)
  EXPECT_TRUE(q.erase(-3, 3));
  EXPECT_EQ(items(q), (std::vector<T>{{1, 4, 4}, {5, 0, 0}, {5, 2, 2}}));
  EXPECT_EQ(q.size(), 3u);
}

// Against std::set under random inserts and erases (equal priorities, the
// FIFO case, included).
TEST(ReadyQueue, MatchesAnOrderedSet) {
  std::mt19937 rng(7);
  std::vector<Op> ops(2000);
  for (int i = 0; i < 2000; ++i) ops[static_cast<size_t>(i)].id = i;
  ReadyQueue<Op> q;
  std::set<std::tuple<int32_t, uint64_t, int>> ref;
  uint64_t order = 0;
  for (int step = 0; step < 20000; ++step) {
    const bool add = ref.empty() || (rng() % 3 != 0 && order < ops.size());
    if (add) {
      const int32_t prio = static_cast<int32_t>(rng() % 4) - 1;
      Op* op = &ops[order];
      q.insert(prio, order, op);
      ref.emplace(prio, order, op->id);
      ++order;
    } else {
      auto it = ref.begin();
      std::advance(it, static_cast<long>(rng() % ref.size()));
      ASSERT_TRUE(q.erase(std::get<0>(*it), std::get<1>(*it)));
      ref.erase(it);
    }
    // The head, which the lane's decisions read.
    ASSERT_EQ(q.empty(), ref.empty());
    if (!ref.empty()) {
      ASSERT_EQ(q.begin()->op->id, std::get<2>(*ref.begin()));
    }
    if (order == ops.size() && ref.empty()) break;
  }
  using T = std::tuple<int32_t, uint64_t, int>;
  EXPECT_EQ(items(q), std::vector<T>(ref.begin(), ref.end()));
}

}  // namespace
}  // namespace kf
