// Unit tests of src/topo/split_plan: membership and order of split groups.
#include "topo/split_plan.h"

#include <gtest/gtest.h>

#include <vector>

namespace kf {
namespace {

std::vector<SplitRequest> requests(const std::vector<std::pair<int, int>>& color_key) {
  std::vector<SplitRequest> r;
  for (auto& ck : color_key) r.push_back({ck.first, ck.second});
  return r;
}

TEST(SplitPlan, OrdersByKeyThenRank) {
  auto r = requests({{0, 5}, {1, 0}, {0, 1}, {0, 5}, {1, -3}, {0, 1}});
  EXPECT_EQ(split_members(r, 0), (std::vector<int>{2, 5, 0, 3}));
  EXPECT_EQ(split_members(r, 1), (std::vector<int>{4, 1}));
  EXPECT_TRUE(split_members(r, 2).empty());
}

TEST(SplitPlan, NoneJoinsNothing) {
  auto r = requests({{-1, 0}, {3, 0}, {-1, 0}, {3, 0}});
  EXPECT_TRUE(split_members(r, -1).empty());
  EXPECT_EQ(split_members(r, 3), (std::vector<int>{1, 3}));
}

TEST(SplitPlan, HostAndCross) {
  // Ranks 0, 2, 4 on host a; 1, 3 on host b; 5 on host c.
  std::vector<LocalTopology> ranks(6);
  const char* hosts[] = {"a", "b", "a", "b", "a", "c"};
  for (size_t i = 0; i < ranks.size(); ++i) ranks[i].host_id = hosts[i];
  JobTopology topo(ranks);
  std::vector<SplitRequest> by_host, cross;
  for (int r = 0; r < 6; ++r) {
    by_host.push_back(host_split(topo, r));
    cross.push_back(cross_split(topo, r));
  }
  EXPECT_EQ(split_members(by_host, by_host[0].color), (std::vector<int>{0, 2, 4}));
  EXPECT_EQ(split_members(by_host, by_host[1].color), (std::vector<int>{1, 3}));
  EXPECT_EQ(split_members(by_host, by_host[5].color), (std::vector<int>{5}));
  // Local rank 0 of every host, in host order; local rank 2 only on host a.
  EXPECT_EQ(split_members(cross, cross[0].color), (std::vector<int>{0, 1, 5}));
  EXPECT_EQ(split_members(cross, cross[3].color), (std::vector<int>{2, 3}));
  EXPECT_EQ(split_members(cross, cross[4].color), (std::vector<int>{4}));
}

}  // namespace
}  // namespace kf
