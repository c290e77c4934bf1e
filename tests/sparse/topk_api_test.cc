// kf_topk through the public header: argument errors (status and last-error
// text), the options struct (NULL, older sizes, bad magic, ranges), and that
// both algorithms answer as the internal functions do.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kungfu/kungfu.h"
#include "topk_test_util.h"

namespace {

std::string last_error() {
  return kf_comm_last_error(nullptr);
}

TEST(TopkApi, ArgumentErrors) {
  const float x[4] = {1, -5, 3, 2};
  float v[4];
  uint32_t i[4];
  struct Case {
    kf_status_t got;
    const char* needle;
  };
  kf_topk_options_t bad_magic = KF_TOPK_OPTIONS_INITIALIZER;
  bad_magic.magic = 0;
  kf_topk_options_t small = KF_TOPK_OPTIONS_INITIALIZER;
  small.size = 4;
  kf_topk_options_t rounds = KF_TOPK_OPTIONS_INITIALIZER;
  rounds.rounds = 1001;
  kf_topk_options_t neg_rounds = KF_TOPK_OPTIONS_INITIALIZER;
  neg_rounds.rounds = -1;
  kf_topk_options_t threads = KF_TOPK_OPTIONS_INITIALIZER;
  threads.threads = -2;
  const Case cases[] = {
      {kf_topk(nullptr, 4, 2, KF_TOPK_MSTOPK, nullptr, v, i), "x is NULL"},
      {kf_topk(x, 4, 2, KF_TOPK_EXACT, nullptr, nullptr, i), "values is NULL"},
      {kf_topk(x, 4, 2, KF_TOPK_MSTOPK, nullptr, v, nullptr), "indices is NULL"},
      {kf_topk(x, uint64_t{1} << 32, 2, KF_TOPK_MSTOPK, nullptr, v, i), "below 2^32"},
      {kf_topk(x, 4, 2, static_cast<kf_topk_algo_t>(7), nullptr, v, i), "algo 7"},
      {kf_topk(x, 4, 2, KF_TOPK_MSTOPK, &bad_magic, v, i), "KF_TOPK_OPTIONS_INITIALIZER"},
      {kf_topk(x, 4, 2, KF_TOPK_MSTOPK, &small, v, i), "KF_TOPK_OPTIONS_INITIALIZER"},
      {kf_topk(x, 4, 2, KF_TOPK_MSTOPK, &rounds, v, i), "rounds = 1001"},
      {kf_topk(x, 4, 2, KF_TOPK_MSTOPK, &neg_rounds, v, i), "rounds = -1"},
      {kf_topk(x, 4, 2, KF_TOPK_MSTOPK, &threads, v, i), "threads = -2"},
  };
  int n = 0;
  for (const Case& c : cases) {
    EXPECT_EQ(c.got, KF_ERR_INVALID_ARGUMENT) << "case " << n;
    ++n;
  }
  // The last-error text is per call: check each needle right after its call.
  kf_topk(nullptr, 4, 2, KF_TOPK_MSTOPK, nullptr, v, i);
  EXPECT_NE(last_error().find("x is NULL"), std::string::npos) << last_error();
  kf_topk(x, 4, 2, static_cast<kf_topk_algo_t>(7), nullptr, v, i);
  EXPECT_NE(last_error().find("algo 7"), std::string::npos) << last_error();
  kf_topk(x, 4, 2, KF_TOPK_MSTOPK, &rounds, v, i);
  EXPECT_NE(last_error().find("rounds = 1001"), std::string::npos) << last_error();
  const float nan_x[3] = {1.0f, std::numeric_limits<float>::quiet_NaN(), 2.0f};
  EXPECT_EQ(kf_topk(nan_x, 3, 1, KF_TOPK_EXACT, nullptr, v, i), KF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("x[1] is NaN"), std::string::npos) << last_error();
}

TEST(TopkApi, ZeroCountsAndNullBuffers) {
  const float x[4] = {1, -5, 3, 2};
  EXPECT_EQ(kf_topk(x, 4, 0, KF_TOPK_MSTOPK, nullptr, nullptr, nullptr), KF_SUCCESS);
  EXPECT_EQ(kf_topk(nullptr, 0, 3, KF_TOPK_EXACT, nullptr, nullptr, nullptr), KF_SUCCESS);
}

TEST(TopkApi, BothAlgorithmsSelect) {
  const float x[6] = {0.5f, -5.0f, 3.0f, 0.1f, 2.0f, -0.2f};
  for (kf_topk_algo_t algo : {KF_TOPK_MSTOPK, KF_TOPK_EXACT}) {
    float v[3] = {};
    uint32_t i[3] = {};
    ASSERT_EQ(kf_topk(x, 6, 3, algo, nullptr, v, i), KF_SUCCESS) << last_error();
    EXPECT_EQ(std::vector<uint32_t>(i, i + 3), (std::vector<uint32_t>{1, 2, 4}));
    EXPECT_EQ(std::vector<float>(v, v + 3), (std::vector<float>{-5.0f, 3.0f, 2.0f}));
  }
  // k > d returns all d.
  float v[6];
  uint32_t i[6];
  ASSERT_EQ(kf_topk(x, 6, 100, KF_TOPK_MSTOPK, nullptr, v, i), KF_SUCCESS);
  EXPECT_EQ(std::memcmp(v, x, sizeof(x)), 0);
}

TEST(TopkApi, OptionsAreReadAndOlderStructsWork) {
  const auto x = kf_test::gaussian(1 << 18, 8);
  const size_t k = 500;
  std::vector<float> v1(k), v2(k);
  std::vector<uint32_t> i1(k), i2(k);
  kf_topk_options_t o = KF_TOPK_OPTIONS_INITIALIZER;
  o.rounds = 2;
  o.seed = 99;
  o.threads = 1;
  ASSERT_EQ(kf_topk(x.data(), x.size(), k, KF_TOPK_MSTOPK, &o, v1.data(), i1.data()), KF_SUCCESS);
  const kf_test::Pairs want = kf_test::naive_mstopk(x, k, 2, 99);
  EXPECT_EQ(i1, want.indices);
  // A caller whose struct ends before `seed` gets the default seed 0.
  o.size = offsetof(kf_topk_options_t, seed);
  ASSERT_EQ(kf_topk(x.data(), x.size(), k, KF_TOPK_MSTOPK, &o, v2.data(), i2.data()), KF_SUCCESS);
  EXPECT_EQ(i2, kf_test::naive_mstopk(x, k, 2, 0).indices);
}

}  // namespace
