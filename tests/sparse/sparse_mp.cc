// kf_sparse_all_reduce and kf_pto through the public API, on real ranks
// under kfrun: exact flat (and, on one host, hierarchical) results for
// unambiguous integer data, in place and not, SUM and AVG; residual
// bookkeeping (what every rank sent + its residual = its gradient + old
// residual, and what arrived is the sum of what was sent); the dense
// fallback; PTO with uneven counts and a failing callback; argument errors.
// Run with KF_SPARSE_MIN_ELEMS=0 so small buffers take the sparse paths.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kungfu/kungfu.h"
#include "mp_common.h"
#include "sparse_mp_common.h"
#include "sparse_ref.h"

namespace {

using sparse_mp::compare;
using sparse_mp::g_failures;
using sparse_mp::g_rank;
using sparse_mp::g_size;
using sparse_mp::options;

// The relative tolerance of every result check here, SUM included.
constexpr double kTol = 1e-6;

#define CHECK_OK(comm, call)                                                         \
  do {                                                                               \
    kf_status_t s_ = (call);                                                         \
    CHECK(s_ == KF_SUCCESS, "%s: %s: %s", #call, kf_status_string(s_), kf_comm_last_error(comm)); \
  } while (0)

void test_flat(kf_comm_t comm) {
  const size_t d = 3001, k = 37;
  const std::vector<double> want = sparse_ref::flat_expected(d, k, g_size);
  const kf_sparse_options_t o = options(KF_SPARSE_FLAT);
  for (kf_op_t op : {KF_SUM, KF_AVG}) {
    std::vector<float> x = sparse_ref::flat_gradient(d, g_rank);
    std::vector<float> y(d, -1.0f);
    CHECK_OK(comm, kf_sparse_all_reduce(comm, x.data(), y.data(), d, op, k, nullptr, &o));
    compare("flat", y, want, op == KF_AVG ? 1.0 / g_size : 1.0, kTol);
    CHECK(x == sparse_ref::flat_gradient(d, g_rank), "flat: sendbuf was modified");
    CHECK_OK(comm, kf_sparse_all_reduce(comm, x.data(), x.data(), d, op, k, nullptr, &o));
    compare("flat in place", x, want, op == KF_AVG ? 1.0 / g_size : 1.0, kTol);
  }
}

// The hierarchical algorithm on whatever layout this job has (one host: a
// single column; the emulated 2 x 2 cluster: two hosts). KF_SPARSE_AUTO
// must pick it on several hosts and give the same bits.
void test_hier(kf_comm_t comm) {
  sparse_mp::HierCase h;
  if (!sparse_mp::hier_case(comm, &h)) return;
  std::vector<float> y(h.d, -1.0f);
  const kf_sparse_options_t o = options(KF_SPARSE_HIER);
  CHECK_OK(comm, kf_sparse_all_reduce(comm, h.x.data(), y.data(), h.d, KF_SUM, h.k, nullptr, &o));
  compare("hier", y, h.want, 1.0, kTol);
  if (h.hosts > 1 && h.local_size > 1) {
    std::fill(y.begin(), y.end(), -1.0f);
    CHECK_OK(comm,
             kf_sparse_all_reduce(comm, h.x.data(), y.data(), h.d, KF_AVG, h.k, nullptr, nullptr));
    compare("auto (hier) avg", y, h.want, 1.0 / g_size, kTol);
  }
  if (g_rank == 0) std::printf("hierarchical checked on %d host(s) x %d\n", h.hosts, h.local_size);
}

void test_residual(kf_comm_t comm) {
  const size_t d = 2003, k = 25;
  const kf_sparse_options_t o = options(KF_SPARSE_FLAT);
  std::vector<float> res(d, 0.0f), y(d);
  for (int step = 0; step < 3; ++step) {
    std::vector<float> x = sparse_ref::flat_gradient(d, g_rank + step);
    std::vector<float> acc(d), sent(d, 0.0f);
    for (size_t i = 0; i < d; ++i) acc[i] = x[i] + res[i];
    CHECK_OK(comm, kf_sparse_all_reduce(comm, x.data(), y.data(), d, KF_SUM, k, res.data(), &o));
    size_t n = 0;
    for (size_t i = 0; i < d; ++i) {
      if (res[i] == acc[i]) continue;
      CHECK(res[i] == 0.0f, "step %d: residual[%zu] = %g is neither 0 nor %g", step, i,
            double(res[i]), double(acc[i]));
      sent[i] = acc[i];  // sent + residual = gradient + old residual
      ++n;
    }
    CHECK(n == k, "step %d: %zu entries sent, want %zu", step, n, k);
    // The sum of what every rank sent, densely, is what arrived.
    std::vector<float> total(d);
    CHECK_OK(comm, kf_all_reduce(comm, sent.data(), total.data(), d, KF_FLOAT32, KF_SUM));
    std::vector<double> want(total.begin(), total.end());
    compare("residual step", y, want, 1.0, kTol);
  }
}

void test_dense_fallback(kf_comm_t comm) {
  const size_t d = 1000;
  std::vector<float> x(d), y(d), res(d, 2.0f);
  for (size_t i = 0; i < d; ++i) x[i] = static_cast<float>(i % 97) - 40.0f;
  // KF_SPARSE_DENSE, and 2k >= count, both take the dense path.
  const kf_sparse_options_t dense = options(KF_SPARSE_DENSE);
  CHECK_OK(comm, kf_sparse_all_reduce(comm, x.data(), y.data(), d, KF_SUM, 10, res.data(), &dense));
  for (size_t i = 0; i < d; ++i) {
    CHECK(y[i] == g_size * (x[i] + 2.0f), "dense [%zu] = %g", i, double(y[i]));
    CHECK(res[i] == 0.0f, "dense: residual [%zu] not cleared", i);
    if (g_failures > 5) return;
  }
  const kf_sparse_options_t flat = options(KF_SPARSE_FLAT);
  CHECK_OK(comm, kf_sparse_all_reduce(comm, x.data(), y.data(), d, KF_AVG, d / 2, nullptr, &flat));
  for (size_t i = 0; i < d; ++i) CHECK(y[i] == x[i], "half density [%zu] = %g", i, double(y[i]));
}

struct PtoState {
  uint64_t seen = 0;
  int fail_rank = -1;
};

int pto_step(void* shard, uint64_t count, uint64_t offset, void* user) {
  auto* st = static_cast<PtoState*>(user);
  auto* s = static_cast<double*>(shard);
  for (uint64_t i = 0; i < count; ++i) s[i] = s[i] * 0.5 + static_cast<double>(offset + i);
  st->seen += count;
  return g_rank == st->fail_rank ? 7 : 0;
}

void test_pto(kf_comm_t comm) {
  for (size_t count : {size_t{0}, size_t{3}, size_t{1001}, size_t{300007}}) {
    std::vector<double> b(count);
    for (size_t i = 0; i < count; ++i) b[i] = static_cast<double>(i % 1000) * (g_rank + 1);
    PtoState st;
    CHECK_OK(comm, kf_pto(comm, count ? b.data() : nullptr, count, KF_FLOAT64, KF_SUM, pto_step, &st));
    const double tri = g_size * (g_size + 1) / 2.0;
    for (size_t i = 0; i < count; ++i) {
      const double want = static_cast<double>(i % 1000) * tri * 0.5 + static_cast<double>(i);
      if (b[i] != want) {
        CHECK(false, "pto count %zu [%zu] = %g, want %g", count, i, b[i], want);
        break;
      }
    }
    uint64_t total = 0;
    CHECK_OK(comm, kf_all_reduce(comm, &st.seen, &total, 1, KF_UINT64, KF_SUM));
    CHECK(total == count, "pto: shards cover %llu elements, want %zu", (unsigned long long)total, count);
  }
  // A callback failing on the last rank fails the call everywhere; the
  // communicator stays usable.
  std::vector<double> b(100, 1.0);
  PtoState st;
  st.fail_rank = g_size - 1;
  kf_status_t s = kf_pto(comm, b.data(), b.size(), KF_FLOAT64, KF_AVG, pto_step, &st);
  CHECK(s == KF_ERR_INVALID_USAGE, "failing callback: %s", kf_status_string(s));
  const std::string want = "returned 7 on rank " + std::to_string(g_size - 1);
  CHECK(std::strstr(kf_comm_last_error(comm), want.c_str()) != nullptr, "error text: %s",
        kf_comm_last_error(comm));
  float one = 1.0f, sum = 0.0f;
  CHECK_OK(comm, kf_all_reduce(comm, &one, &sum, 1, KF_FLOAT32, KF_SUM));
  CHECK(sum == static_cast<float>(g_size), "after the failed pto, all_reduce gave %g", double(sum));
}

void expect_arg_error(kf_comm_t comm, kf_status_t s, const char* what) {
  CHECK(s == KF_ERR_INVALID_ARGUMENT, "%s: got %s", what, kf_status_string(s));
  CHECK(std::strlen(kf_comm_last_error(comm)) > 0, "%s: no error text", what);
}

void test_errors(kf_comm_t comm) {
  std::vector<float> x(100, 1.0f), y(100), r(100);
  expect_arg_error(comm, kf_sparse_all_reduce(comm, nullptr, y.data(), 100, KF_SUM, 5, nullptr, nullptr), "NULL sendbuf");
  expect_arg_error(comm, kf_sparse_all_reduce(comm, x.data(), nullptr, 100, KF_SUM, 5, nullptr, nullptr), "NULL recvbuf");
  expect_arg_error(comm, kf_sparse_all_reduce(comm, x.data(), y.data(), 100, KF_MAX, 5, nullptr, nullptr), "op MAX");
  expect_arg_error(comm, kf_sparse_all_reduce(comm, x.data(), y.data(), 100, (kf_op_t)77, 5, nullptr, nullptr), "op 77");
  expect_arg_error(comm, kf_sparse_all_reduce(comm, x.data(), y.data(), 100, KF_SUM, 0, nullptr, nullptr), "k 0");
  expect_arg_error(comm, kf_sparse_all_reduce(comm, x.data(), y.data(), 100, KF_SUM, 101, nullptr, nullptr), "k > count");
  expect_arg_error(comm, kf_sparse_all_reduce(comm, x.data(), y.data(), 100, KF_SUM, 5, x.data() + 50, nullptr), "residual overlaps");
  expect_arg_error(comm, kf_sparse_all_reduce(comm, x.data(), y.data(), 5000000000ull, KF_SUM, 5, nullptr, nullptr), "count > 2^32");
  kf_sparse_options_t o = KF_SPARSE_OPTIONS_INITIALIZER;
  o.magic = 0;
  expect_arg_error(comm, kf_sparse_all_reduce(comm, x.data(), y.data(), 100, KF_SUM, 5, nullptr, &o), "bad magic");
  o = KF_SPARSE_OPTIONS_INITIALIZER;
  o.algorithm = 9;
  expect_arg_error(comm, kf_sparse_all_reduce(comm, x.data(), y.data(), 100, KF_SUM, 5, nullptr, &o), "algorithm 9");
  o = KF_SPARSE_OPTIONS_INITIALIZER;
  o.rounds = 100;
  expect_arg_error(comm, kf_sparse_all_reduce(comm, x.data(), y.data(), 100, KF_SUM, 5, nullptr, &o), "rounds 100");
  expect_arg_error(comm, kf_sparse_all_reduce(nullptr, x.data(), y.data(), 100, KF_SUM, 5, nullptr, nullptr), "NULL comm");
  expect_arg_error(comm, kf_pto(comm, x.data(), 100, KF_FLOAT32, KF_SUM, nullptr, nullptr), "pto NULL fn");
  expect_arg_error(comm, kf_pto(comm, nullptr, 100, KF_FLOAT32, KF_SUM, pto_step, nullptr), "pto NULL buf");
  expect_arg_error(comm, kf_pto(comm, x.data(), 100, (kf_dtype_t)99, KF_SUM, pto_step, nullptr), "pto dtype");
  // count 0 is valid and moves nothing.
  CHECK_OK(comm, kf_sparse_all_reduce(comm, nullptr, nullptr, 0, KF_SUM, 0, nullptr, nullptr));
}

// Ranks that disagree on k fail with KF_ERR_INVALID_USAGE (the signature
// check). Runs last: the communicator is not used afterwards. Only at np 2:
// with more ranks, a rank whose ring neighbours agree with it sees only a
// peer that stopped, and waits for the timeout (the blocking engine checks
// signatures per frame received).
void test_mismatch(kf_comm_t comm) {
  if (g_size != 2) return;
  const size_t d = 3001;
  std::vector<float> x = sparse_ref::flat_gradient(d, g_rank), y(d);
  const kf_sparse_options_t o = options(KF_SPARSE_FLAT);
  const kf_status_t s = kf_sparse_all_reduce(comm, x.data(), y.data(), d, KF_SUM,
                                             g_rank == 0 ? 5 : 6, nullptr, &o);
  CHECK(s == KF_ERR_INVALID_USAGE, "k mismatch: got %s: %s", kf_status_string(s),
        kf_comm_last_error(comm));
}

}  // namespace

int main() {
  kf_comm_t comm = kfmp::init_or_die("sparse_mp", &g_rank, &g_size);
  test_errors(comm);
  test_flat(comm);
  test_hier(comm);
  test_residual(comm);
  test_dense_fallback(comm);
  test_pto(comm);
  test_mismatch(comm);
  kf_comm_destroy(comm);
  return sparse_mp::report("");
}
