// MSTopK and exact top-k: exact_topk against a full sort, mstopk against the
// naive statement of the algorithm (bit-identical, for every thread count and
// kernel ISA), the properties the sparse all_reduce relies on (k distinct
// ascending indices, values from x), quality, determinism and edge cases.
#include "sparse/topk.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "algo/kernels/kernels.h"
#include "topk_test_util.h"

namespace {

using kf_test::Pairs;

Pairs run_mstopk(const std::vector<float>& x, size_t k, kf::TopkOptions o = {}) {
  Pairs p;
  const size_t n = std::min(k, x.size());
  p.values.assign(n, -7.0f);
  p.indices.assign(n, 0xdeadbeefu);
  const kf::Status st = kf::mstopk(x.data(), x.size(), k, o, p.values.data(), p.indices.data());
  EXPECT_TRUE(st.is_ok()) << st.message();
  return p;
}

Pairs run_exact(const std::vector<float>& x, size_t k) {
  Pairs p;
  const size_t n = std::min(k, x.size());
  p.values.assign(n, -7.0f);
  p.indices.assign(n, 0xdeadbeefu);
  const kf::Status st = kf::exact_topk(x.data(), x.size(), k, p.values.data(), p.indices.data());
  EXPECT_TRUE(st.is_ok()) << st.message();
  return p;
}

// k distinct ascending indices below d, each value the x it names.
void expect_valid(const std::vector<float>& x, size_t k, const Pairs& p) {
  ASSERT_EQ(p.values.size(), std::min(k, x.size()));
  ASSERT_EQ(p.indices.size(), p.values.size());
  for (size_t j = 0; j < p.indices.size(); ++j) {
    ASSERT_LT(p.indices[j], x.size()) << "pair " << j;
    if (j > 0) {
      ASSERT_LT(p.indices[j - 1], p.indices[j]) << "pair " << j;
    }
    ASSERT_EQ(p.values[j], x[p.indices[j]]) << "pair " << j;
  }
}

double mass_captured(const std::vector<float>& x, size_t k, const Pairs& p) {
  return kf_test::l1(p.values) / kf_test::l1(kf_test::sorted_topk(x, k).values);
}

TEST(ExactTopk, EqualsFullSort) {
  for (size_t d : {1u, 7u, 100u, 4097u, 300000u}) {
    const auto x = kf_test::gaussian(d, d);
    for (size_t k : {size_t{1}, size_t{2}, d / 100 + 1, d / 3 + 1, d - 1}) {
      if (k == 0 || k > d) continue;
      const Pairs want = kf_test::sorted_topk(x, k);
      const Pairs got = run_exact(x, k);
      EXPECT_EQ(got.indices, want.indices) << "d=" << d << " k=" << k;
      EXPECT_EQ(got.values, want.values) << "d=" << d << " k=" << k;
    }
  }
}

TEST(ExactTopk, TiesTakeLowestIndices) {
  std::vector<float> x(1000, 0.5f);
  x[10] = -2.0f;
  x[900] = 2.0f;
  const Pairs got = run_exact(x, 5);
  EXPECT_EQ(got.indices, (std::vector<uint32_t>{0, 1, 2, 10, 900}));
  EXPECT_EQ(got.values, (std::vector<float>{0.5f, 0.5f, 0.5f, -2.0f, 2.0f}));
}

TEST(Mstopk, EqualsNaiveAlgorithmForEveryThreadCountAndIsa) {
  // 1.5 M elements: 23 blocks, so blocks spread unevenly over 2, 3 and 7
  // threads, and the candidate copy happens.
  const auto x = kf_test::heavy_tailed(1500000, 11);
  for (size_t k : {size_t{1500}, size_t{15000}, size_t{400000}}) {
    for (int rounds : {0, 3, 20}) {
      const Pairs want = kf_test::naive_mstopk(x, k, rounds, 5);
      for (const char* isa : {"baseline", "avx2"}) {
        if (!kf::kernels_force_isa(isa)) continue;  // avx2 unsupported here
        for (int threads : {1, 2, 3, 7}) {
          kf::TopkOptions o;
          o.rounds = rounds;
          o.seed = 5;
          o.threads = threads;
          const Pairs got = run_mstopk(x, k, o);
          ASSERT_EQ(got.indices, want.indices)
              << "k=" << k << " rounds=" << rounds << " isa=" << isa << " threads=" << threads;
          ASSERT_EQ(got.values, want.values);
        }
      }
    }
  }
  ASSERT_TRUE(kf::kernels_force_isa("auto"));
}

TEST(Mstopk, ValidAndCapturesTheMass) {
  const size_t d = 1 << 20;
  for (int data = 0; data < 2; ++data) {
    const auto x = data == 0 ? kf_test::gaussian(d, 1) : kf_test::heavy_tailed(d, 2);
    for (double density : {0.001, 0.01}) {
      const size_t k = static_cast<size_t>(density * d);
      const Pairs got = run_mstopk(x, k);
      expect_valid(x, k, got);
      const double q = mass_captured(x, k, got);
      EXPECT_GE(q, 0.95) << (data == 0 ? "gaussian" : "student-t") << " density " << density;
      EXPECT_LE(q, 1.0 + 1e-9);
    }
  }
}

TEST(Mstopk, OneHugeOutlierDoesNotStallTheSearch) {
  // A linear bisection of [mean, max] would only probe far above the k-th
  // magnitude here; the key bisection still finds it. The outlier is left out
  // of the mass, which it would otherwise dominate.
  auto x = kf_test::gaussian(1 << 18, 3);
  x[12345] = 1e30f;
  const size_t k = 262;
  const Pairs got = run_mstopk(x, k);
  expect_valid(x, k, got);
  auto mass_without_outlier = [](const Pairs& p) {
    double s = 0.0;
    for (size_t j = 0; j < p.values.size(); ++j) {
      if (p.indices[j] != 12345) s += std::fabs(p.values[j]);
    }
    return s;
  };
  EXPECT_GE(mass_without_outlier(got), 0.95 * mass_without_outlier(kf_test::sorted_topk(x, k)));
}

TEST(Mstopk, DeterministicGivenTheSeed) {
  const auto x = kf_test::gaussian(1 << 20, 4);
  kf::TopkOptions o;
  o.rounds = 4;  // a wide band, so the window matters
  o.seed = 42;
  const Pairs a = run_mstopk(x, 1000, o);
  const Pairs b = run_mstopk(x, 1000, o);
  EXPECT_EQ(a.indices, b.indices);
  EXPECT_EQ(a.values, b.values);
  o.seed = 43;
  const Pairs c = run_mstopk(x, 1000, o);
  expect_valid(x, 1000, c);
  EXPECT_NE(a.indices, c.indices) << "a different seed should move the window";
}

TEST(Mstopk, SparseInputFewerNonzerosThanK) {
  // 50 nonzeros, k = 200: the mean is below every nonzero, phase two searches
  // below it; all nonzeros are taken and zeros fill the rest.
  std::vector<float> x(100000, 0.0f);
  for (int i = 0; i < 50; ++i) x[i * 1999] = static_cast<float>(i + 1) * (i % 2 ? -1.0f : 1.0f);
  const Pairs got = run_mstopk(x, 200);
  expect_valid(x, 200, got);
  EXPECT_DOUBLE_EQ(kf_test::l1(got.values), 50.0 * 51.0 / 2.0);
}

TEST(Mstopk, DenseSelectionAboveHalf) {
  const auto x = kf_test::gaussian(100000, 9);
  const size_t k = 90000;  // the k-th magnitude lies below the mean
  const Pairs got = run_mstopk(x, k);
  expect_valid(x, k, got);
  EXPECT_GE(mass_captured(x, k, got), 0.999);
}

TEST(TopkEdges, KZeroWritesNothing) {
  const auto x = kf_test::gaussian(100, 1);
  EXPECT_TRUE(kf::mstopk(x.data(), x.size(), 0, {}, nullptr, nullptr).is_ok());
  EXPECT_TRUE(kf::exact_topk(x.data(), x.size(), 0, nullptr, nullptr).is_ok());
}

TEST(TopkEdges, DZero) {
  EXPECT_TRUE(kf::mstopk(nullptr, 0, 5, {}, nullptr, nullptr).is_ok());
  EXPECT_TRUE(kf::exact_topk(nullptr, 0, 5, nullptr, nullptr).is_ok());
}

TEST(TopkEdges, KAtLeastDReturnsAll) {
  const auto x = kf_test::gaussian(1000, 2);
  for (size_t k : {size_t{1000}, size_t{5000}}) {
    for (const Pairs& p : {run_mstopk(x, k), run_exact(x, k)}) {
      ASSERT_EQ(p.values, x);
      for (uint32_t i = 0; i < 1000; ++i) ASSERT_EQ(p.indices[i], i);
    }
  }
}

TEST(TopkEdges, AllZeros) {
  const std::vector<float> x(300000, 0.0f);
  for (int threads : {1, 3}) {
    kf::TopkOptions o;
    o.threads = threads;
    const Pairs p = run_mstopk(x, 3000, o);
    expect_valid(x, 3000, p);
  }
  expect_valid(x, 3000, run_exact(x, 3000));
}

TEST(TopkEdges, ManyTiesAtTheMax) {
  auto x = kf_test::gaussian(200000, 5);
  for (size_t i = 0; i < x.size(); i += 100) x[i] = (i % 200 ? -9.0f : 9.0f);  // 2000 ties
  const Pairs p = run_mstopk(x, 100);
  expect_valid(x, 100, p);
  for (float v : p.values) EXPECT_EQ(std::fabs(v), 9.0f);
  const Pairs e = run_exact(x, 100);
  EXPECT_EQ(e.indices[0], 0u);
  EXPECT_EQ(e.indices[99], 9900u);
}

TEST(TopkEdges, NanAndInfAreRejectedWithTheirIndex) {
  const float bad[] = {std::numeric_limits<float>::quiet_NaN(),
                       std::numeric_limits<float>::infinity(),
                       -std::numeric_limits<float>::infinity()};
  for (float b : bad) {
    auto x = kf_test::gaussian(100000, 6);
    x[77777] = b;
    std::vector<float> v(10, -7.0f);
    std::vector<uint32_t> i(10, 0);
    for (int algo = 0; algo < 2; ++algo) {
      for (size_t k : {size_t{10}, size_t{200000}}) {
        std::vector<float> vv(std::min<size_t>(k, x.size()));
        std::vector<uint32_t> ii(vv.size());
        const kf::Status st = algo == 0
                                  ? kf::mstopk(x.data(), x.size(), k, {}, vv.data(), ii.data())
                                  : kf::exact_topk(x.data(), x.size(), k, vv.data(), ii.data());
        EXPECT_EQ(st.code(), KF_ERR_INVALID_ARGUMENT);
        EXPECT_NE(st.message().find("x[77777]"), std::string::npos) << st.message();
      }
    }
  }
}

TEST(TopkEdges, BadArguments) {
  float v[4];
  uint32_t i[4];
  const float x[4] = {1, 2, 3, 4};
  EXPECT_EQ(kf::mstopk(nullptr, 4, 2, {}, v, i).code(), KF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kf::mstopk(x, 4, 2, {}, nullptr, i).code(), KF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kf::mstopk(x, 4, 2, {}, v, nullptr).code(), KF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kf::exact_topk(x, 4, 2, v, nullptr).code(), KF_ERR_INVALID_ARGUMENT);
  // Rejected before x is read.
  EXPECT_EQ(kf::mstopk(x, size_t{1} << 32, 2, {}, v, i).code(), KF_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(kf::exact_topk(x, size_t{1} << 32, 2, v, i).code(), KF_ERR_INVALID_ARGUMENT);
  kf::TopkOptions o;
  o.rounds = -1;
  EXPECT_EQ(kf::mstopk(x, 4, 2, o, v, i).code(), KF_ERR_INVALID_ARGUMENT);
  o = {};
  o.threads = 5000;
  EXPECT_EQ(kf::mstopk(x, 4, 2, o, v, i).code(), KF_ERR_INVALID_ARGUMENT);
}

}  // namespace
