// The sparse all_reduce algorithms (flat, hierarchical, dense fallback) and
// the PTO over in-process thread peers: exact results for unambiguous top-k
// data, residual bookkeeping, host groupings that one machine cannot give
// a real job (3 x 2, 2 x 3, 4 x 1), and failure propagation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "algo/common.h"
#include "sparse/sparse_allreduce.h"
#include "sparse/sparse_ops.h"
#include "sparse_ref.h"
#include "thread_peers.h"

namespace kf {
namespace test {
namespace {

std::vector<int> host_numbers(int hosts, int local) {
  std::vector<int> h;
  for (int i = 0; i < hosts; ++i)
    for (int l = 0; l < local; ++l) h.push_back(i);
  return h;
}

AlgoOptions small_chunks() {
  AlgoOptions o;
  o.chunk_bytes = 4096;  // several chunks per segment: exercises the pipelining
  return o;
}

void expect_ok(const std::vector<Status>& st, ThreadWorld& w) {
  for (size_t r = 0; r < st.size(); ++r) EXPECT_TRUE(st[r].is_ok()) << "rank " << r << ": " << st[r].message();
  EXPECT_TRUE(w.problems().empty()) << w.problems().front();
}

class FlatTest : public ::testing::TestWithParam<int> {};

TEST_P(FlatTest, ExactSumAndAverage) {
  const int n = GetParam();
  const size_t d = 3001, k = 37;
  const std::vector<double> want = sparse_ref::flat_expected(d, k, n);
  for (kf_op_t op : {KF_SUM, KF_AVG}) {
    for (bool inplace : {false, true}) {
      ThreadWorld w(n);
      std::vector<std::vector<float>> out(static_cast<size_t>(n));
      expect_ok(w.run([&](Peers& p) {
        std::vector<float> x = sparse_ref::flat_gradient(d, p.rank());
        std::vector<float>& y = out[static_cast<size_t>(p.rank())];
        y.assign(d, -1.0f);
        SparseArgs a;
        a.send = x.data();
        a.recv = inplace ? x.data() : y.data();
        a.count = d;
        a.k = k;
        a.op = op;
        Status st = sparse_all_reduce_flat(p, small_chunks(), a);
        if (inplace) y = x;
        return st;
      }), w);
      for (int r = 0; r < n; ++r) {
        for (size_t i = 0; i < d; ++i) {
          const double e = op == KF_AVG ? want[i] / n : want[i];
          ASSERT_NEAR(out[static_cast<size_t>(r)][i], e, std::fabs(e) * 1e-6)
              << "rank " << r << " i " << i << " op " << op << " inplace " << inplace;
        }
      }
    }
  }
}

TEST_P(FlatTest, ResidualKeepsWhatWasNotSent) {
  const int n = GetParam();
  const size_t d = 2003, k = 20;
  ThreadWorld w(n);
  std::vector<std::vector<float>> recv(static_cast<size_t>(n)), sent(static_cast<size_t>(n));
  expect_ok(w.run([&](Peers& p) {
    const size_t r = static_cast<size_t>(p.rank());
    std::vector<float> x = sparse_ref::flat_gradient(d, p.rank());
    std::vector<float> res(d, 0.0f);
    for (size_t i = 0; i < d; i += 7) res[i] = 0.5f;  // an old residual
    std::vector<float> acc(d);
    for (size_t i = 0; i < d; ++i) acc[i] = x[i] + res[i];
    recv[r].assign(d, 0.0f);
    SparseArgs a;
    a.send = x.data();
    a.recv = recv[r].data();
    a.count = d;
    a.k = k;
    a.residual = res.data();
    KF_RETURN_IF_ERROR(sparse_all_reduce_flat(p, small_chunks(), a));
    // Every entry is either sent whole (residual 0) or kept whole.
    size_t zeroed = 0;
    sent[r].assign(d, 0.0f);
    for (size_t i = 0; i < d; ++i) {
      if (res[i] == acc[i]) continue;
      if (res[i] != 0.0f) return internal_error("residual " + std::to_string(i) + " is neither 0 nor kept");
      sent[r][i] = acc[i];
      ++zeroed;
    }
    if (zeroed != k) return internal_error("sent " + std::to_string(zeroed) + " entries, want k");
    // The sent ones are the k largest of gradient + old residual.
    for (size_t i : sparse_ref::exact_top(acc.data(), d, k)) {
      if (sent[r][i] != acc[i]) return internal_error("entry " + std::to_string(i) + " not sent");
    }
    return Status::ok();
  }), w);
  // What arrived is exactly the sum of what the ranks took out of their residuals.
  for (size_t i = 0; i < d; ++i) {
    float s = 0.0f;
    for (int r = 0; r < n; ++r) s += sent[static_cast<size_t>(r)][i];
    for (int r = 0; r < n; ++r) ASSERT_EQ(recv[static_cast<size_t>(r)][i], s) << "i " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Ranks, FlatTest, ::testing::Values(2, 3, 4, 17));

struct Grid {
  int hosts;
  int local;
};

class HierTest : public ::testing::TestWithParam<Grid> {};

TEST_P(HierTest, ExactSum) {
  const Grid g = GetParam();
  const int n = g.hosts * g.local;
  const std::vector<int> host_of = host_numbers(g.hosts, g.local);
  for (size_t d : {size_t{3001}, size_t{4099}}) {
    const size_t k = 61;
    const std::vector<double> want = sparse_ref::hier_expected(d, k, g.hosts, g.local);
    for (kf_op_t op : {KF_SUM, KF_AVG}) {
      ThreadWorld w(n);
      std::vector<std::vector<float>> out(static_cast<size_t>(n));
      expect_ok(w.run([&](Peers& p) {
        const HostLayout hl(host_of);
        std::vector<float> x = sparse_ref::hier_gradient(d, hl.host_of(p.rank()), hl.local_rank(p.rank()));
        std::vector<float>& y = out[static_cast<size_t>(p.rank())];
        y.assign(d, -1.0f);
        SparseArgs a;
        a.send = x.data();
        a.recv = y.data();
        a.count = d;
        a.k = k;
        a.op = op;
        return sparse_all_reduce_hier(p, small_chunks(), hl, a);
      }), w);
      for (int r = 0; r < n; ++r) {
        for (size_t i = 0; i < d; ++i) {
          const double e = op == KF_AVG ? want[i] / n : want[i];
          ASSERT_NEAR(out[static_cast<size_t>(r)][i], e, std::fabs(e) * 1e-6)
              << "rank " << r << " i " << i << " d " << d << " op " << op;
        }
      }
    }
  }
}

TEST_P(HierTest, ResidualOwnsItsShard) {
  const Grid g = GetParam();
  const int n = g.hosts * g.local;
  const std::vector<int> host_of = host_numbers(g.hosts, g.local);
  const size_t d = 3001, k = 40;
  ThreadWorld w(n);
  std::vector<std::vector<float>> res(static_cast<size_t>(n));
  std::vector<float> recv0;
  expect_ok(w.run([&](Peers& p) {
    const HostLayout hl(host_of);
    std::vector<float> x = sparse_ref::hier_gradient(d, hl.host_of(p.rank()), hl.local_rank(p.rank()));
    std::vector<float>& rs = res[static_cast<size_t>(p.rank())];
    rs.assign(d, 0.0f);
    std::vector<float> y(d);
    SparseArgs a;
    a.send = x.data();
    a.recv = y.data();
    a.count = d;
    a.k = k;
    a.residual = rs.data();
    KF_RETURN_IF_ERROR(sparse_all_reduce_hier(p, small_chunks(), hl, a));
    if (p.rank() == 0) recv0 = y;
    return Status::ok();
  }), w);
  // Per host: sent + residual (summed over the host's ranks) = host gradient,
  // and residuals are zero outside each rank's shard. Summed over hosts, the
  // sent part is what every rank received.
  const size_t L = static_cast<size_t>(g.local);
  std::vector<float> sent_total(d, 0.0f);
  for (int h = 0; h < g.hosts; ++h) {
    std::vector<float> host_sum(d, 0.0f), host_res(d, 0.0f);
    for (int l = 0; l < g.local; ++l) {
      const std::vector<float> x = sparse_ref::hier_gradient(d, h, l);
      for (size_t i = 0; i < d; ++i) host_sum[i] += x[i];
      size_t b, len;
      sparse_ref::piece(d, L, static_cast<size_t>(l), &b, &len);
      const std::vector<float>& rs = res[static_cast<size_t>(h * g.local + l)];
      for (size_t i = 0; i < d; ++i) {
        if (i >= b && i < b + len) {
          host_res[i] += rs[i];
        } else {
          ASSERT_EQ(rs[i], 0.0f) << "rank " << h * g.local + l << " wrote outside its shard at " << i;
        }
      }
    }
    size_t nsent = 0;
    for (size_t i = 0; i < d; ++i) {
      if (host_res[i] != host_sum[i]) {
        ASSERT_EQ(host_res[i], 0.0f) << "host " << h << " i " << i;
        sent_total[i] += host_sum[i];
        ++nsent;
      }
    }
    const size_t want_sent = L * hier_shard_k(k, L, d);
    EXPECT_EQ(nsent, want_sent) << "host " << h;
  }
  for (size_t i = 0; i < d; ++i) ASSERT_EQ(recv0[i], sent_total[i]) << "i " << i;
}

TEST_P(HierTest, NonFiniteGradientFailsEveryRankAndKeepsThemInStep) {
  const Grid g = GetParam();
  const int n = g.hosts * g.local;
  const std::vector<int> host_of = host_numbers(g.hosts, g.local);
  const size_t d = 1009, k = 10;
  ThreadWorld w(n);
  const std::vector<Status> st = w.run([&](Peers& p) {
    const HostLayout hl(host_of);
    std::vector<float> x = sparse_ref::hier_gradient(d, hl.host_of(p.rank()), hl.local_rank(p.rank()));
    if (p.rank() == 0) x[0] = std::numeric_limits<float>::quiet_NaN();  // shard 0 of host 0
    std::vector<float> y(d, 0.0f);
    SparseArgs a;
    a.send = x.data();
    a.recv = y.data();
    a.count = d;
    a.k = k;
    return sparse_all_reduce_hier(p, small_chunks(), hl, a);
  });
  EXPECT_TRUE(w.problems().empty());
  EXPECT_EQ(st[0].code(), KF_ERR_INVALID_ARGUMENT) << st[0].message();
  for (int r = 1; r < n; ++r) {
    EXPECT_EQ(st[static_cast<size_t>(r)].code(), KF_ERR_INVALID_USAGE) << "rank " << r << ": " << st[static_cast<size_t>(r)].message();
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, HierTest,
                         ::testing::Values(Grid{2, 2}, Grid{3, 2}, Grid{2, 3}, Grid{4, 1},
                                           Grid{1, 4}),
                         [](const ::testing::TestParamInfo<Grid>& i) {
                           return std::to_string(i.param.hosts) + "x" + std::to_string(i.param.local);
                         });

TEST(SparseDense, FallbackAddsAndClearsResidual) {
  const int n = 3;
  const size_t d = 100;
  ThreadWorld w(n);
  std::vector<std::vector<float>> out(n);
  expect_ok(w.run([&](Peers& p) {
    std::vector<float> x(d), res(d);
    for (size_t i = 0; i < d; ++i) {
      x[i] = static_cast<float>(i + static_cast<size_t>(p.rank()));
      res[i] = 1.0f;
    }
    out[static_cast<size_t>(p.rank())].assign(d, 0.0f);
    SparseArgs a;
    a.send = x.data();
    a.recv = out[static_cast<size_t>(p.rank())].data();
    a.count = d;
    a.k = 1;
    a.residual = res.data();
    KF_RETURN_IF_ERROR(sparse_all_reduce_dense(p, small_chunks(), HostLayout::single_host(n), a));
    for (float v : res)
      if (v != 0.0f) return internal_error("residual not cleared");
    return Status::ok();
  }), w);
  for (const auto& y : out)
    for (size_t i = 0; i < d; ++i) ASSERT_EQ(y[i], static_cast<float>(3 * i + 3 + 3));
}

TEST(SparseHier, UnequalHostsAreRefused) {
  ThreadWorld w(4);
  const std::vector<Status> st = w.run([&](Peers& p) {
    std::vector<float> x(1000, 1.0f), y(1000);
    SparseArgs a;
    a.send = x.data();
    a.recv = y.data();
    a.count = x.size();
    a.k = 10;
    return sparse_all_reduce_hier(p, small_chunks(), HostLayout({0, 0, 0, 1}), a);
  });
  for (const Status& s : st) EXPECT_EQ(s.code(), KF_ERR_INVALID_USAGE) << s.message();
}

TEST(SparseFlat, NonFiniteGradientFailsEveryRankAndKeepsThemInStep) {
  const int n = 3;
  const size_t d = 1009;
  ThreadWorld w(n);
  const std::vector<Status> st = w.run([&](Peers& p) {
    std::vector<float> x = sparse_ref::flat_gradient(d, p.rank());
    if (p.rank() == 1) x[5] = std::numeric_limits<float>::infinity();
    std::vector<float> y(d);
    SparseArgs a;
    a.send = x.data();
    a.recv = y.data();
    a.count = d;
    a.k = 10;
    return sparse_all_reduce_flat(p, small_chunks(), a);
  });
  EXPECT_TRUE(w.problems().empty());
  EXPECT_EQ(st[1].code(), KF_ERR_INVALID_ARGUMENT) << st[1].message();
  EXPECT_EQ(st[0].code(), KF_ERR_INVALID_USAGE) << st[0].message();
  EXPECT_NE(st[0].message().find("rank 1"), std::string::npos) << st[0].message();
  EXPECT_EQ(st[2].code(), KF_ERR_INVALID_USAGE);
}

// PTO: shards of uneven counts, the callback's changes reach every rank.
TEST(Pto, UnevenShardsAndCallbackResult) {
  for (int n : {2, 3, 4}) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{5}, size_t{1031}}) {
      ThreadWorld w(n);
      std::vector<std::vector<int32_t>> out(static_cast<size_t>(n));
      std::vector<size_t> covered(count, 0);
      std::mutex mu;
      expect_ok(w.run([&](Peers& p) {
        std::vector<int32_t>& b = out[static_cast<size_t>(p.rank())];
        b.resize(count);
        for (size_t i = 0; i < count; ++i) b[i] = static_cast<int32_t>(i) * (p.rank() + 1);
        return pto_over(p, small_chunks(), b.data(), count, KF_INT32, KF_SUM,
                        [&](void* shard, size_t len, size_t off) {
                          auto* s = static_cast<int32_t*>(shard);
                          std::lock_guard<std::mutex> lock(mu);
                          for (size_t i = 0; i < len; ++i) {
                            s[i] = s[i] * 2 + 1;  // the "update"
                            covered[off + i]++;
                          }
                          return 0;
                        });
      }), w);
      const int32_t tri = n * (n + 1) / 2;
      for (size_t i = 0; i < count; ++i) ASSERT_EQ(covered[i], 1u) << "n " << n << " i " << i;
      for (const auto& b : out)
        for (size_t i = 0; i < count; ++i) ASSERT_EQ(b[i], static_cast<int32_t>(i) * tri * 2 + 1);
    }
  }
}

TEST(Pto, CallbackErrorReachesEveryRank) {
  const int n = 3;
  ThreadWorld w(n);
  const std::vector<Status> st = w.run([&](Peers& p) {
    std::vector<float> b(100, 1.0f);
    return pto_over(p, small_chunks(), b.data(), b.size(), KF_FLOAT32, KF_AVG,
                    [&](void*, size_t, size_t) { return p.rank() == 2 ? 42 : 0; });
  });
  EXPECT_TRUE(w.problems().empty());
  for (const Status& s : st) {
    EXPECT_EQ(s.code(), KF_ERR_INVALID_USAGE);
    EXPECT_NE(s.message().find("returned 42 on rank 2"), std::string::npos) << s.message();
  }
}

}  // namespace
}  // namespace test
}  // namespace kf
