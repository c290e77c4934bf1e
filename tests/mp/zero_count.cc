// Zero-length blocking collectives are named operations like any other: they
// succeed with NULL buffers, keep every rank's per-name sequence in step (the
// calls after them match and give exact results), and a rank that calls one
// with count 0 while its peers pass a nonzero count gets an error on every
// rank instead of returning early and leaving the peers to hang.
#include <cstdio>
#include <vector>

#include "mp_common.h"

namespace {

int failures = 0;

void expect(bool ok, int rank, const char* what, kf_status_t st, kf_comm_t comm) {
  std::printf("%s rank %d: %s -> %s%s%s\n", ok ? "PASS" : "FAIL", rank, what,
              kf_status_string(st), st == KF_SUCCESS ? "" : ": ",
              st == KF_SUCCESS ? "" : kf_comm_last_error(comm));
  if (!ok) ++failures;
}

// A real all_reduce after the zero-length calls: each rank gives rank + 1 + i.
void check_sum(kf_comm_t comm, int rank, int size, const char* what) {
  std::vector<int32_t> v(5);
  for (size_t i = 0; i < v.size(); ++i) v[i] = rank + 1 + static_cast<int32_t>(i);
  kf_status_t st = kf_all_reduce(comm, v.data(), v.data(), v.size(), KF_INT32, KF_SUM);
  bool ok = st == KF_SUCCESS;
  for (size_t i = 0; ok && i < v.size(); ++i) {
    ok = v[i] == size * (size + 1) / 2 + size * static_cast<int32_t>(i);
  }
  expect(ok, rank, what, st, comm);
}

}  // namespace

int main() {
  int rank = 0, size = 1;
  kf_comm_t comm = kfmp::init_or_die("mp_zero_count", &rank, &size);

  // 1. Every blocking collective with count 0 and NULL buffers, twice, with
  //    a real all_reduce in between and after.
  for (int round = 0; round < 2; ++round) {
    kf_status_t st = kf_all_reduce(comm, nullptr, nullptr, 0, KF_FLOAT32, KF_SUM);
    expect(st == KF_SUCCESS, rank, "all_reduce count 0", st, comm);
    check_sum(comm, rank, size, "all_reduce after a zero-length all_reduce");
    st = kf_broadcast(comm, nullptr, nullptr, 0, KF_INT32, 0);
    expect(st == KF_SUCCESS, rank, "broadcast count 0", st, comm);
    st = kf_reduce(comm, nullptr, nullptr, 0, KF_INT32, KF_MAX, size - 1);
    expect(st == KF_SUCCESS, rank, "reduce count 0", st, comm);
    st = kf_all_gather(comm, nullptr, nullptr, 0, KF_INT64);
    expect(st == KF_SUCCESS, rank, "all_gather count 0", st, comm);
    st = kf_reduce_scatter(comm, nullptr, nullptr, 0, KF_FLOAT64, KF_SUM);
    expect(st == KF_SUCCESS, rank, "reduce_scatter count 0", st, comm);
    st = kf_all_to_all(comm, nullptr, nullptr, 0, KF_INT8);
    expect(st == KF_SUCCESS, rank, "all_to_all count 0", st, comm);
    st = kf_gather(comm, nullptr, nullptr, 0, KF_INT32, 0);
    expect(st == KF_SUCCESS, rank, "gather count 0", st, comm);
    st = kf_scatter(comm, nullptr, nullptr, 0, KF_INT32, 0);
    expect(st == KF_SUCCESS, rank, "scatter count 0", st, comm);
    check_sum(comm, rank, size, "all_reduce after the zero-length calls");
  }

  // 2. Rank 0 calls with count 0, the others with count 4: before zero-length
  //    calls reached the engine, rank 0 returned success here and the others
  //    hung until the timeout. Now every rank gets an error.
  if (size > 1) {
    std::vector<float> v(4, 1.0f);
    const uint64_t count = rank == 0 ? 0 : v.size();
    kf_status_t st = kf_all_reduce(comm, v.data(), v.data(), count, KF_FLOAT32, KF_SUM);
    expect(st != KF_SUCCESS, rank, "all_reduce, count 0 on rank 0 only (must fail)", st, comm);
  }
  kf_comm_destroy(comm);
  return failures == 0 ? 0 : 1;
}
