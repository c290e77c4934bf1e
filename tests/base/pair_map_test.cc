#include "base/pair_map.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <vector>

namespace kf {
namespace {

using Key = std::pair<uint64_t, uint64_t>;

TEST(PairMap, FindsWhatItHolds) {
  PairMap<int> m;
  EXPECT_TRUE(m.empty());
  EXPECT_TRUE(m.emplace({1, 2}, 12).second);
  EXPECT_FALSE(m.emplace({1, 2}, 99).second);  // present: left as it was
  EXPECT_TRUE(m.emplace({2, 1}, 21).second);
  EXPECT_EQ(m.size(), 2u);
  ASSERT_NE(m.find({1, 2}), m.end());
  EXPECT_EQ(m.find({1, 2})->second, 12);
  EXPECT_EQ(m.find({2, 1})->second, 21);
  EXPECT_EQ(m.find({1, 1}), m.end());
  EXPECT_EQ(m.count({2, 1}), 1u);
  EXPECT_EQ(m.erase(Key{1, 2}), 1u);
  EXPECT_EQ(m.erase(Key{1, 2}), 0u);
  EXPECT_EQ(m.find({1, 2}), m.end());
  EXPECT_EQ(m.size(), 1u);
}

// Random insertions and erasures against std::map, through growth and
// through runs of colliding keys (one name, many sequence numbers, and
// keys crafted to share a home slot are both in the mix).
TEST(PairMap, AgreesWithStdMap) {
  std::mt19937_64 rng(7);
  PairMap<uint64_t> m(16);
  std::map<Key, uint64_t> ref;
  for (int i = 0; i < 200000; ++i) {
    const Key k{rng() % 8, rng() % 512};
    switch (rng() % 4) {
      case 0:
      case 1: {
        const uint64_t v = rng();
        const bool fresh = ref.emplace(k, v).second;
        EXPECT_EQ(m.emplace(k, v).second, fresh);
        break;
      }
      case 2:
        EXPECT_EQ(m.erase(k), ref.erase(k));
        break;
      default: {
        auto it = m.find(k);
        auto r = ref.find(k);
        ASSERT_EQ(it == m.end(), r == ref.end());
        if (r != ref.end()) {
          EXPECT_EQ(it->second, r->second);
          if (rng() % 2) m.erase(it), ref.erase(r);  // erase by iterator too
        }
      }
    }
    ASSERT_EQ(m.size(), ref.size());
  }
  size_t seen = 0;
  for (auto& e : m) {
    ++seen;
    ASSERT_EQ(ref.at(e.first), e.second);
  }
  EXPECT_EQ(seen, ref.size());
}

// Without Recycle an erased value is destroyed (a shared object is not
// kept alive by the table); with it the value waits in its slot and
// claim() hands it to the next key.
TEST(PairMap, RecyclesValuesOnlyWhenAsked) {
  auto obj = std::make_shared<int>(5);
  {
    PairMap<std::shared_ptr<int>> m;
    m.emplace({1, 1}, obj);
    EXPECT_EQ(obj.use_count(), 2);
    m.erase(Key{1, 1});
    EXPECT_EQ(obj.use_count(), 1);
  }
  PairMap<std::vector<int>, true> r;
  auto a = r.claim({3, 3});
  ASSERT_TRUE(a.second);
  a.first->second.assign(100, 1);
  const int* storage = a.first->second.data();
  r.erase(Key{3, 3});
  auto b = r.claim({3, 3});  // the same home slot: the kept vector
  ASSERT_TRUE(b.second);
  EXPECT_EQ(b.first->second.size(), 100u);
  EXPECT_EQ(b.first->second.data(), storage);
}

}  // namespace
}  // namespace kf
