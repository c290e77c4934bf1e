// kf_isparse_all_reduce (the sparse all_reduce as a named async operation)
// on real ranks under kfrun, with KF_SPARSE_MIN_ELEMS=0:
//  - flat results exact (SUM; AVG within 1e-6 relative) for several sparse
//    operations in flight at once under reused names, mixed with async
//    all_reduce / broadcast of other priorities (exact int32 results), and
//    waited for in a different order than submitted; in place too;
//  - with a residual, the async form gives the same bits (output and
//    residual) as the blocking call on the same data;
//  - the hierarchical algorithm (and auto, which picks it on several hosts)
//    exact on this job's layout, beside a dense async all_reduce;
//  - argument errors (bad name, k, op) return KF_ERR_INVALID_ARGUMENT with
//    *req NULL; ranks that disagree on k fail with KF_ERR_INVALID_USAGE.
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
using sparse_mp::g_rank;
using sparse_mp::g_size;
using sparse_mp::options;

// SUM of integers: exact; AVG (scale 1/size): within 1e-6 relative.
double tolerance(double scale) {
  return scale == 1.0 ? 0.0 : 1e-6;
}

struct Dense {
  std::vector<int32_t> send, recv;
  kf_request_t req = nullptr;
  bool bcast = false;
};

void test_mixed(kf_comm_t comm) {
  const size_t d = 3001;
  const int kOps = 6;
  const kf_sparse_options_t so = options(KF_SPARSE_FLAT);
  std::vector<std::vector<float>> x(kOps), y(kOps);
  std::vector<kf_request_t> sreq(kOps, nullptr);
  std::vector<Dense> dense(2 * kOps);
  for (int i = 0; i < kOps; ++i) {
    const size_t k = 30 + size_t(i) * 5;
    const kf_op_t op = i % 2 == 0 ? KF_SUM : KF_AVG;
    x[i] = sparse_ref::flat_gradient(d, g_rank);
    y[i].assign(d, -1.0f);
    const bool in_place = i == 3;
    kf_op_options_t o = KF_OP_OPTIONS_INITIALIZER;
    o.priority = (i * 3) % 4 - 1;                                // -1 .. 2
    const std::string name = "sparse." + std::to_string(i % 2);  // reused names
    kf_status_t s =
        kf_isparse_all_reduce(comm, name.c_str(), x[i].data(), in_place ? x[i].data() : y[i].data(),
                              d, op, k, nullptr, &so, &o, &sreq[i]);
    CHECK(s == KF_SUCCESS, "submit sparse %d: %s: %s", i, kf_status_string(s),
          kf_comm_last_error(comm));
    // Dense async operations of other priorities in between.
    for (int j = 0; j < 2; ++j) {
      Dense& dn = dense[size_t(2 * i + j)];
      const uint64_t n = 20000 + uint64_t(i) * 1000;
      dn.bcast = j == 1;
      dn.send.resize(n);
      for (uint64_t e = 0; e < n; ++e)
        dn.send[e] = int32_t((e * 13 + uint64_t(g_rank) * 101 + uint64_t(i)) % 977);
      dn.recv.assign(n, -7);
      kf_op_options_t od = KF_OP_OPTIONS_INITIALIZER;
      od.priority = 3 - i - j;
      od.partition_bytes = 16384;
      const std::string dname = "dense." + std::to_string(j);
      s = dn.bcast ? kf_ibroadcast(comm, dname.c_str(), dn.send.data(), dn.recv.data(), n, KF_INT32,
                                   i % g_size, &od, &dn.req)
                   : kf_iall_reduce(comm, dname.c_str(), dn.send.data(), dn.recv.data(), n,
                                    KF_INT32, KF_SUM, &od, &dn.req);
      CHECK(s == KF_SUCCESS, "submit dense %d.%d: %s", i, j, kf_status_string(s));
    }
  }
  // Wait: dense first (newest first), then sparse in reverse.
  for (int i = 2 * kOps - 1; i >= 0; --i) {
    Dense& dn = dense[size_t(i)];
    kf_status_t s = kf_request_wait(dn.req);
    CHECK(s == KF_SUCCESS, "dense %d: %s: %s", i, kf_status_string(s), kf_request_error(dn.req));
    kf_request_free(dn.req);
    const int op_i = i / 2;
    size_t wrong = 0;
    for (uint64_t e = 0; e < dn.recv.size(); ++e) {
      int32_t want = 0;
      if (dn.bcast) {
        want = int32_t((e * 13 + uint64_t(op_i % g_size) * 101 + uint64_t(op_i)) % 977);
      } else {
        for (int r = 0; r < g_size; ++r)
          want += int32_t((e * 13 + uint64_t(r) * 101 + uint64_t(op_i)) % 977);
      }
      if (dn.recv[e] != want) ++wrong;
    }
    CHECK(wrong == 0, "dense %d: %zu wrong elements", i, wrong);
  }
  for (int i = kOps - 1; i >= 0; --i) {
    kf_status_t s = kf_request_wait(sreq[i]);
    CHECK(s == KF_SUCCESS, "sparse %d: %s: %s", i, kf_status_string(s), kf_request_error(sreq[i]));
    kf_request_free(sreq[i]);
    const size_t k = 30 + size_t(i) * 5;
    const std::vector<double> want = sparse_ref::flat_expected(d, k, g_size);
    const std::string what = "async sparse " + std::to_string(i);
    const double scale = i % 2 == 0 ? 1.0 : 1.0 / g_size;
    compare(what.c_str(), i == 3 ? x[i] : y[i], want, scale, tolerance(scale));
    if (i != 3)
      CHECK(x[i] == sparse_ref::flat_gradient(d, g_rank), "sparse %d: sendbuf modified", i);
  }
}

// Async and blocking forms agree bit for bit, residual included.
void test_residual(kf_comm_t comm) {
  const size_t d = 4001, k = 50;
  const kf_sparse_options_t so = options(KF_SPARSE_FLAT);
  std::vector<float> x = sparse_ref::flat_gradient(d, g_rank + 3);
  std::vector<float> res_a(d, 0.0f), res_b(d, 0.0f), ya(d), yb(d);
  for (int step = 0; step < 2; ++step) {
    kf_status_t s =
        kf_sparse_all_reduce(comm, x.data(), ya.data(), d, KF_SUM, k, res_a.data(), &so);
    CHECK(s == KF_SUCCESS, "blocking: %s", kf_comm_last_error(comm));
    kf_request_t r = nullptr;
    s = kf_isparse_all_reduce(comm, "residual", x.data(), yb.data(), d, KF_SUM, k, res_b.data(),
                              &so, nullptr, &r);
    CHECK(s == KF_SUCCESS, "async submit: %s", kf_comm_last_error(comm));
    if (r != nullptr) {
      s = kf_request_wait(r);
      CHECK(s == KF_SUCCESS, "async: %s", kf_request_error(r));
      kf_request_free(r);
    }
    CHECK(std::memcmp(ya.data(), yb.data(), d * sizeof(float)) == 0, "step %d: outputs differ",
          step);
    CHECK(std::memcmp(res_a.data(), res_b.data(), d * sizeof(float)) == 0,
          "step %d: residuals differ", step);
  }
}

// The hierarchical algorithm through the async path on this job's layout
// (one host: a single column; the emulated 2 x 2 cluster: two hosts): exact
// against the reference, and KF_SPARSE_AUTO (hier on several hosts) at a
// high priority beside a dense async all_reduce.
void test_hier(kf_comm_t comm) {
  sparse_mp::HierCase h;
  if (!sparse_mp::hier_case(comm, &h)) return;
  std::vector<float> y(h.d, -1.0f), z(h.d, -1.0f);
  std::vector<int32_t> ds(50000, g_rank + 1), dr(50000, 0);
  const kf_sparse_options_t hier = options(KF_SPARSE_HIER);
  kf_op_options_t low = KF_OP_OPTIONS_INITIALIZER, high = KF_OP_OPTIONS_INITIALIZER;
  low.priority = 5;
  high.priority = -5;
  kf_request_t rd = nullptr, rh = nullptr, ra = nullptr;
  kf_status_t s = kf_iall_reduce(comm, "hier.dense", ds.data(), dr.data(), ds.size(), KF_INT32,
                                 KF_SUM, &low, &rd);
  CHECK(s == KF_SUCCESS, "dense submit: %s", kf_status_string(s));
  s = kf_isparse_all_reduce(comm, "hier.sparse", h.x.data(), y.data(), h.d, KF_SUM, h.k, nullptr,
                            &hier, &high, &rh);
  CHECK(s == KF_SUCCESS, "hier submit: %s", kf_comm_last_error(comm));
  s = kf_isparse_all_reduce(comm, "hier.auto", h.x.data(), z.data(), h.d, KF_SUM, h.k, nullptr,
                            nullptr, &high, &ra);
  CHECK(s == KF_SUCCESS, "auto submit: %s", kf_comm_last_error(comm));
  for (kf_request_t r : {ra, rh, rd}) {
    if (r == nullptr) continue;
    s = kf_request_wait(r);
    CHECK(s == KF_SUCCESS, "hier test wait: %s: %s", kf_status_string(s), kf_request_error(r));
    kf_request_free(r);
  }
  compare("async hier", y, h.want, 1.0, 0.0);  // exact
  if (h.hosts > 1 && h.local_size > 1) compare("async auto (hier)", z, h.want, 1.0, 0.0);
  size_t wrong = 0;
  for (int32_t v : dr) wrong += v != g_size * (g_size + 1) / 2;
  CHECK(wrong == 0, "dense beside hier: %zu wrong elements", wrong);
  if (g_rank == 0) std::printf("hierarchical checked on %d host(s) x %d\n", h.hosts, h.local_size);
}

void test_errors(kf_comm_t comm) {
  std::vector<float> x(100, 1.0f), y(100);
  kf_request_t r = reinterpret_cast<kf_request_t>(0x1);
  kf_status_t s = kf_isparse_all_reduce(comm, "", x.data(), y.data(), 100, KF_SUM, 5, nullptr,
                                        nullptr, nullptr, &r);
  CHECK(s == KF_ERR_INVALID_ARGUMENT && r == nullptr, "empty name: %s", kf_status_string(s));
  s = kf_isparse_all_reduce(comm, "kf.x", x.data(), y.data(), 100, KF_SUM, 5, nullptr, nullptr,
                            nullptr, &r);
  CHECK(s == KF_ERR_INVALID_ARGUMENT && std::strstr(kf_comm_last_error(comm), "reserved"),
        "reserved name: %s: %s", kf_status_string(s), kf_comm_last_error(comm));
  s = kf_isparse_all_reduce(comm, "e", x.data(), y.data(), 100, KF_SUM, 0, nullptr, nullptr,
                            nullptr, &r);
  CHECK(s == KF_ERR_INVALID_ARGUMENT && r == nullptr &&
            std::strstr(kf_comm_last_error(comm), "kf_isparse_all_reduce: k 0"),
        "k 0: %s: %s", kf_status_string(s), kf_comm_last_error(comm));
  s = kf_isparse_all_reduce(comm, "e", x.data(), y.data(), 100, KF_MAX, 5, nullptr, nullptr,
                            nullptr, &r);
  CHECK(s == KF_ERR_INVALID_ARGUMENT, "op max: %s", kf_status_string(s));
}

void test_mismatch(kf_comm_t comm) {
  const size_t d = 3001;
  std::vector<float> x = sparse_ref::flat_gradient(d, g_rank), y(d);
  const kf_sparse_options_t so = options(KF_SPARSE_FLAT);
  kf_request_t r = nullptr;
  kf_status_t s = kf_isparse_all_reduce(comm, "mm", x.data(), y.data(), d, KF_SUM,
                                        g_rank == 0 ? 5 : 6, nullptr, &so, nullptr, &r);
  CHECK(s == KF_SUCCESS, "mismatch submit: %s", kf_status_string(s));
  if (r == nullptr) return;
  s = kf_request_wait(r);
  CHECK(s == KF_ERR_INVALID_USAGE && std::strstr(kf_request_error(r), "k, algorithm") != nullptr,
        "k mismatch: got %s: %s", kf_status_string(s), kf_request_error(r));
  kf_request_free(r);
}

}  // namespace

int main() {
  kf_comm_t comm = kfmp::init_or_die("sparse_async_mp", &g_rank, &g_size);
  test_errors(comm);
  test_mixed(comm);
  test_residual(comm);
  test_hier(comm);
  if (g_size > 1) test_mismatch(comm);
  // The communicator still works.
  int32_t one = 1, total = 0;
  kf_status_t s = kf_all_reduce(comm, &one, &total, 1, KF_INT32, KF_SUM);
  CHECK(s == KF_SUCCESS && total == g_size, "final blocking all_reduce: %s", kf_status_string(s));
  kf_comm_destroy(comm);
  return sparse_mp::report(" [async]");
}
