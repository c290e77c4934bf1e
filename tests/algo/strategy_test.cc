// The hierarchical and tree strategies over in-process thread peers, on
// fake host layouts (2x2, 3x2, 2x3, unequal 3+1 and 1+2+3, hosts
// interleaved by rank, one rank per host, one host): all_reduce for every
// dtype x op x size x in-place mode and strategy, broadcast and all_gather
// for every root and layout, checked exactly (KF_AVG of floats within the
// dtype's tolerance) and bitwise equal on every rank.
#include "algo/strategy.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "algo/host_layout.h"
#include "algo/sub_peers.h"
#include "test_data.h"
#include "thread_peers.h"

namespace kf {
namespace test {
namespace {

using Bytes = std::vector<char>;

struct FakeLayout {
  const char* name;
  std::vector<int> host_of;
};
const FakeLayout kLayouts[] = {
    {"2x2", {0, 0, 1, 1}},
    {"3x2", {0, 0, 1, 1, 2, 2}},
    {"2x3", {0, 0, 0, 1, 1, 1}},
    {"3+1", {0, 0, 0, 1}},
    {"1+2+3", {0, 1, 1, 2, 2, 2}},
    {"interleaved2x2", {0, 1, 0, 1}},
    {"1x4", {0, 0, 0, 0}},
    {"3x1", {0, 1, 2}},
};

struct Algo {
  const char* name;
  std::function<Status(Peers&, const AlgoOptions&, const HostLayout&, const void*, void*, size_t,
                       kf_dtype_t, kf_op_t)>
      run;
};

const std::vector<Algo>& all_reduce_algos() {
  static const std::vector<Algo> algos = {
      {"hier", [](Peers& p, const AlgoOptions& o, const HostLayout& h, const void* s, void* r,
                  size_t n, kf_dtype_t t, kf_op_t op) {
         return hier_all_reduce(p, o, h, size_t(1) << 30, s, r, n, t, op);
       }},
      // Slices of 24 bytes: the pipelined schedule with many slices.
      {"hier-pipelined", [](Peers& p, const AlgoOptions& o, const HostLayout& h, const void* s,
                            void* r, size_t n, kf_dtype_t t, kf_op_t op) {
         return hier_all_reduce(p, o, h, 24, s, r, n, t, op);
       }},
      {"tree", [](Peers& p, const AlgoOptions& o, const HostLayout& h, const void* s, void* r,
                  size_t n, kf_dtype_t t, kf_op_t op) {
         return tree_all_reduce(p, o, h, 1, s, r, n, t, op);
       }},
      {"multi-tree", [](Peers& p, const AlgoOptions& o, const HostLayout& h, const void* s,
                        void* r, size_t n, kf_dtype_t t, kf_op_t op) {
         return tree_all_reduce(p, o, h, h.host_count(), s, r, n, t, op);
       }},
      // More trees than hosts: several trees share a root host.
      {"5-trees", [](Peers& p, const AlgoOptions& o, const HostLayout& h, const void* s, void* r,
                     size_t n, kf_dtype_t t, kf_op_t op) {
         return tree_all_reduce(p, o, h, 5, s, r, n, t, op);
       }},
      {"auto", [](Peers& p, const AlgoOptions& o, const HostLayout& h, const void* s, void* r,
                  size_t n, kf_dtype_t t, kf_op_t op) {
         StrategyOptions so;
         so.hier_threshold_bytes = 64;
         so.hier_slice_bytes = 1000;
         return strategy_all_reduce(p, o, so, h, Strategy::kAuto, s, r, n, t, op);
       }},
  };
  return algos;
}

const kf_dtype_t kDtypes[] = {KF_INT8,   KF_UINT8,   KF_INT32,    KF_UINT32,  KF_INT64,
                              KF_UINT64, KF_FLOAT16, KF_BFLOAT16, KF_FLOAT32, KF_FLOAT64};
const kf_op_t kOps[] = {KF_SUM, KF_PROD, KF_MIN, KF_MAX, KF_AVG};
bool all_ops(kf_dtype_t t) {
  return t == KF_INT8 || t == KF_UINT32 || t == KF_INT64 || t == KF_BFLOAT16 || t == KF_FLOAT32;
}
struct Shape {
  size_t count;
  size_t chunk_bytes;
};
// Empty, one element, fewer elements than ranks, odd sizes in one chunk and
// cut into many chunks (a chunk size that is no multiple of 8).
const Shape kShapes[] = {{0, 64}, {1, 64}, {5, 64}, {1031, 1 << 20}, {1031, 60}};

std::string text(const FakeLayout& l, const char* algo, kf_dtype_t t, kf_op_t op, Shape s,
                 bool inplace) {
  return std::string(l.name) + " " + algo + " " + dtype_name(t) + " " + op_name(op) +
         " count=" + std::to_string(s.count) + " chunk=" + std::to_string(s.chunk_bytes) +
         (inplace ? " in-place" : " out-of-place");
}

bool run_world(const std::string& what, int n, const std::function<Status(Peers&)>& fn) {
  ThreadWorld w(n);
  const std::vector<Status> st = w.run(fn);
  bool ok = true;
  for (int r = 0; r < n; ++r) {
    if (!st[static_cast<size_t>(r)].is_ok()) {
      ADD_FAILURE() << what << ": rank " << r << " failed: " << st[static_cast<size_t>(r)].message();
      ok = false;
    }
  }
  for (const std::string& p : w.problems()) {
    ADD_FAILURE() << what << ": " << p;
    ok = false;
  }
  return ok;
}

Bytes make_input(kf_dtype_t t, kf_op_t op, int rank, size_t count, size_t first = 0) {
  Bytes b(count * esize(t) + 1);
  for (size_t i = 0; i < count; ++i) set(t, b.data(), i, input_value(t, op, rank, first + i));
  return b;
}

Value expected_reduce(kf_dtype_t t, kf_op_t op, int n, size_t idx) {
  Value acc = input_value(t, op, 0, idx);
  for (int r = 1; r < n; ++r) acc = ref_combine(t, op, acc, input_value(t, op, r, idx));
  if (op == KF_AVG) acc = ref_average(t, acc, n);
  return acc;
}

bool check_values(const std::string& what, int rank, kf_dtype_t t, bool approx, const void* got,
                  size_t count, const std::function<Value(size_t)>& want) {
  for (size_t i = 0; i < count; ++i) {
    const Value g = get(t, got, i);
    const Value w = want(i);
    if (!same(t, g, w, approx)) {
      ADD_FAILURE() << what << ": rank " << rank << " [" << i << "] = " << value_text(t, g)
                    << ", want " << value_text(t, w);
      return false;
    }
  }
  return true;
}

class StrategyTest : public ::testing::TestWithParam<FakeLayout> {};

TEST_P(StrategyTest, AllReduce) {
  const FakeLayout& fl = GetParam();
  const HostLayout hl(fl.host_of);
  const int n = hl.size();
  for (const Algo& algo : all_reduce_algos()) {
    for (kf_dtype_t t : kDtypes) {
      for (kf_op_t op : kOps) {
        // Every op on one dtype of each family and width; sum and avg on all.
        if (op != KF_SUM && op != KF_AVG && !all_ops(t)) continue;
        for (const Shape& s : kShapes) {
          for (int inplace = 0; inplace < 2; ++inplace) {
            const std::string what = text(fl, algo.name, t, op, s, inplace != 0);
            std::vector<Bytes> in(static_cast<size_t>(n)), out(static_cast<size_t>(n));
            for (int r = 0; r < n; ++r) {
              in[r] = make_input(t, op, r, s.count);
              out[r].assign(in[r].size(), 0x5a);
            }
            AlgoOptions o;
            o.chunk_bytes = s.chunk_bytes;
            o.ring_threshold_bytes = 128;  // both flat families inside the phases
            const bool ran = run_world(what, n, [&](Peers& p) {
              const int r = p.rank();
              void* recv = inplace ? in[r].data() : out[r].data();
              return algo.run(p, o, hl, in[r].data(), recv, s.count, t, op);
            });
            ASSERT_TRUE(ran);
            const Bytes& first = inplace ? in[0] : out[0];
            for (int r = 0; r < n; ++r) {
              const Bytes& res = inplace ? in[r] : out[r];
              ASSERT_TRUE(check_values(what, r, t, op == KF_AVG && is_float(t), res.data(), s.count,
                                       [&](size_t i) { return expected_reduce(t, op, n, i); }));
              if (!inplace) {
                ASSERT_TRUE(check_values(what + " (send unchanged)", r, t, false, in[r].data(),
                                         s.count, [&](size_t i) { return input_value(t, op, r, i); }));
              }
              ASSERT_EQ(0, std::memcmp(res.data(), first.data(), s.count * esize(t)))
                  << what << ": rank " << r << " differs bitwise from rank 0";
              // Nothing is written past the result.
              ASSERT_EQ(inplace ? in[r].back() : char(0x5a), res.back()) << what;
            }
          }
        }
      }
    }
  }
}

// Element types of each size: broadcast and all_gather only move bytes.
const kf_dtype_t kMoveDtypes[] = {KF_INT8, KF_FLOAT16, KF_INT32, KF_FLOAT64};

TEST_P(StrategyTest, Broadcast) {
  const FakeLayout& fl = GetParam();
  const HostLayout hl(fl.host_of);
  const int n = hl.size();
  for (kf_dtype_t t : kMoveDtypes) {
    for (const Shape& s : kShapes) {
      for (int root = 0; root < n; ++root) {
        for (int inplace = 0; inplace < 2; ++inplace) {
          const std::string what =
              text(fl, "hier-broadcast", t, KF_SUM, s, inplace != 0) + " root=" + std::to_string(root);
          const Bytes in = make_input(t, KF_SUM, root, s.count);
          std::vector<Bytes> out(static_cast<size_t>(n), Bytes(in.size(), 0x5a));
          if (inplace) out[root] = in;
          AlgoOptions o;
          o.chunk_bytes = s.chunk_bytes;
          o.ring_threshold_bytes = 128;
          ASSERT_TRUE(run_world(what, n, [&](Peers& p) {
            const int r = p.rank();
            const void* send = r != root ? nullptr : inplace ? out[r].data() : in.data();
            return hier_broadcast(p, o, hl, send, out[r].data(), s.count, t, root);
          }));
          for (int r = 0; r < n; ++r) {
            ASSERT_TRUE(check_values(what, r, t, false, out[r].data(), s.count,
                                     [&](size_t i) { return input_value(t, KF_SUM, root, i); }));
            ASSERT_EQ(char(inplace && r == root ? in.back() : 0x5a), out[r].back()) << what;
          }
        }
      }
    }
  }
}

TEST_P(StrategyTest, AllGather) {
  const FakeLayout& fl = GetParam();
  const HostLayout hl(fl.host_of);
  const int n = hl.size();
  for (kf_dtype_t t : kMoveDtypes) {
    for (const Shape& s : kShapes) {
      for (int inplace = 0; inplace < 2; ++inplace) {
        const std::string what = text(fl, "hier-all_gather", t, KF_SUM, s, inplace != 0);
        const size_t count = s.count;
        const size_t total = count * static_cast<size_t>(n);
        std::vector<Bytes> in(static_cast<size_t>(n)), out(static_cast<size_t>(n));
        for (int r = 0; r < n; ++r) {
          in[r] = make_input(t, KF_SUM, r, count, static_cast<size_t>(r) * count);
          out[r].assign(total * esize(t) + 1, 0x5a);
          if (inplace) {
            std::memcpy(out[r].data() + static_cast<size_t>(r) * count * esize(t), in[r].data(),
                        count * esize(t));
          }
        }
        AlgoOptions o;
        o.chunk_bytes = s.chunk_bytes;
        o.ring_threshold_bytes = 128;
        ASSERT_TRUE(run_world(what, n, [&](Peers& p) {
          const int r = p.rank();
          const void* send =
              inplace ? out[r].data() + static_cast<size_t>(r) * count * esize(t) : in[r].data();
          return hier_all_gather(p, o, hl, send, out[r].data(), count, t);
        }));
        for (int r = 0; r < n; ++r) {
          ASSERT_TRUE(check_values(what, r, t, false, out[r].data(), total, [&](size_t i) {
            return input_value(t, KF_SUM, static_cast<int>(i / count), i);
          }));
          ASSERT_EQ(char(0x5a), out[r].back()) << what;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, StrategyTest, ::testing::ValuesIn(kLayouts),
                         [](const ::testing::TestParamInfo<FakeLayout>& param) {
                           std::string name = param.param.name;
                           for (char& c : name) {
                             if (c == '+') c = '_';
                           }
                           return name;
                         });

TEST(HostLayoutTest, GroupsOfAnUnequalInterleavedLayout) {
  // Labels are renumbered by lowest rank: label 7 is host 0.
  const HostLayout hl({7, 3, 7, 7, 3});
  EXPECT_EQ(2, hl.host_count());
  EXPECT_EQ((std::vector<int>{0, 2, 3}), hl.local_group(0));
  EXPECT_EQ((std::vector<int>{1, 4}), hl.local_group(1));
  EXPECT_EQ(2, hl.local_rank(3));
  EXPECT_EQ(1, hl.local_rank(4));
  EXPECT_EQ(2, hl.min_local_size());
  EXPECT_EQ(3, hl.max_local_size());
  EXPECT_FALSE(hl.uniform());
  EXPECT_EQ((std::vector<int>{0, 1}), hl.cross_group(0));
  EXPECT_EQ((std::vector<int>{2, 4}), hl.cross_group(1));
}

TEST(StrategySelection, AutoNeedsSeveralHostsAHostWithSeveralRanksAndASize) {
  StrategyOptions so;
  so.hier_threshold_bytes = 1000;
  const HostLayout two_by_two({0, 0, 1, 1});
  EXPECT_EQ(Strategy::kHierarchical, resolve_strategy(Strategy::kAuto, two_by_two, 4, 1000, so));
  EXPECT_EQ(Strategy::kFlat, resolve_strategy(Strategy::kAuto, two_by_two, 4, 999, so));
  EXPECT_EQ(Strategy::kFlat, resolve_strategy(Strategy::kAuto, HostLayout::single_host(4), 4, 1 << 20, so));
  EXPECT_EQ(Strategy::kFlat, resolve_strategy(Strategy::kAuto, HostLayout::one_per_host(4), 4, 1 << 20, so));
  // Explicit choices stand, except where the layout cannot describe the group.
  EXPECT_EQ(Strategy::kTree, resolve_strategy(Strategy::kTree, HostLayout::single_host(4), 4, 1, so));
  EXPECT_EQ(Strategy::kFlat, resolve_strategy(Strategy::kTree, two_by_two, 5, 1 << 20, so));
  EXPECT_EQ(Strategy::kFlat, resolve_strategy(Strategy::kMultiTree, HostLayout::single_host(1), 1, 1 << 20, so));
  Strategy s;
  EXPECT_TRUE(parse_strategy("multi-tree", &s));
  EXPECT_EQ(Strategy::kMultiTree, s);
  EXPECT_TRUE(parse_strategy("hierarchical", &s));
  EXPECT_EQ(Strategy::kHierarchical, s);
  EXPECT_FALSE(parse_strategy("star", &s));
}

TEST(SubPeersTest, MapsRanksAndMovesStepsIntoTheirPhase) {
  // Two phases between the same pair with the same inner tags: ThreadWorld
  // reports any reuse of a (peer, tag) pair.
  ThreadWorld w(4);
  std::vector<Status> st = w.run([](Peers& p) -> Status {
    std::vector<int> members = p.rank() % 2 == 0 ? std::vector<int>{2, 0} : std::vector<int>{3, 1};
    int got[2] = {-1, -1};
    for (uint32_t phase = 1; phase <= 2; ++phase) {
      SubPeers sp(p, members, phase);
      if (sp.size() != 2 || sp.parent_rank(sp.rank()) != p.rank()) return internal_error("bad map");
      int mine = p.rank() * 10 + static_cast<int>(phase);
      TransferHandle s = sp.isend(1 - sp.rank(), Tag{0, 0}, &mine, sizeof mine);
      TransferHandle r = sp.irecv(1 - sp.rank(), Tag{0, 0}, &got[phase - 1], sizeof(int));
      KF_RETURN_IF_ERROR(sp.wait(r));
      KF_RETURN_IF_ERROR(sp.wait(s));
    }
    const int other = p.rank() < 2 ? p.rank() + 2 : p.rank() - 2;
    if (got[0] != other * 10 + 1 || got[1] != other * 10 + 2) return internal_error("bad data");
    return Status::ok();
  });
  for (const Status& s : st) EXPECT_TRUE(s.is_ok()) << s.message();
  EXPECT_TRUE(w.problems().empty());
  EXPECT_EQ((Tag{3, (5u << kPhaseShift) | 1u}).step, phase_tag(5, 3, 1).step);
}

}  // namespace
}  // namespace test
}  // namespace kf
