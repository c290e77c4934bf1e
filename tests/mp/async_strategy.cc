// Async operations and kf_comm_set_strategy: an operation takes the strategy
// in force when it is submitted (include/kungfu/strategy.h).
//  1. Operations submitted under "hier" stay pending across a collective
//     switch to "flat"; one submitted after it runs flat; all results exact.
//  2. One rank submits an operation before the switch, the others after:
//     every rank's request fails with KF_ERR_INVALID_USAGE naming the
//     strategy (a signature mismatch), never a hang; the communicator keeps
//     working.
// Prints "PASS rank r: ..." or "FAIL ..." lines; exit 1 on any failure.
#include <cstdio>
#include <cstring>
#include <vector>

#include "mp_common.h"

int main() {
  int rank = 0, n = 1;
  kf_comm_t comm = kfmp::init_or_die("mp_async_strategy", &rank, &n);
  int fails = 0;
  auto check = [&](bool ok, const char* what, const char* text) {
    std::printf("%s rank %d: %s%s%s\n", ok ? "PASS" : "FAIL", rank, what, text ? ": " : "",
                text ? text : "");
    if (!ok) ++fails;
  };

  // 1. Pending across the switch.
  check(kf_comm_set_strategy(comm, KF_STRATEGY_HIERARCHICAL) == KF_SUCCESS, "switch to hier",
        kf_comm_last_error(comm));
  const uint64_t big = 300000;
  std::vector<int32_t> a(big), sum(big, -1);
  for (uint64_t j = 0; j < big; ++j)
    a[j] = static_cast<int32_t>((j * 31 + uint64_t(rank) * 7) % 1000);
  kf_request_t ra = nullptr, rg = nullptr;
  kf_status_t st =
      kf_iall_reduce(comm, "y", a.data(), sum.data(), big, KF_INT32, KF_SUM, nullptr, &ra);
  check(st == KF_SUCCESS, "submit all_reduce under hier", kf_comm_last_error(comm));
  check(kf_comm_set_strategy(comm, KF_STRATEGY_FLAT) == KF_SUCCESS, "switch to flat while pending",
        kf_comm_last_error(comm));
  const uint64_t per = 5000;
  std::vector<int64_t> mine(per), all(per * uint64_t(n), -1);
  for (uint64_t j = 0; j < per; ++j) mine[j] = int64_t(rank) * 100000 + int64_t(j);
  st = kf_iall_gather(comm, "z", mine.data(), all.data(), per, KF_INT64, nullptr, &rg);
  check(st == KF_SUCCESS, "submit all_gather under flat", kf_comm_last_error(comm));
  check(kf_request_wait(rg) == KF_SUCCESS, "all_gather under flat", kf_request_error(rg));
  check(kf_request_wait(ra) == KF_SUCCESS, "all_reduce under hier", kf_request_error(ra));
  uint64_t wrong = 0;
  for (uint64_t j = 0; j < big; ++j) {
    int64_t want = 0;
    for (int r = 0; r < n; ++r) want += int64_t((j * 31 + uint64_t(r) * 7) % 1000);
    if (sum[j] != want) ++wrong;
  }
  for (uint64_t i = 0; i < per * uint64_t(n); ++i) {
    if (all[i] != int64_t(i / per) * 100000 + int64_t(i % per)) ++wrong;
  }
  check(wrong == 0, "results exact", nullptr);
  kf_request_free(ra);
  kf_request_free(rg);

  // 2. The odd rank submits "x" before the switch to hier, the others after.
  const bool odd = rank == n - 1;
  std::vector<int32_t> x(4096, 1), xo(4096, 0);
  kf_request_t rx = nullptr;
  if (odd) kf_iall_reduce(comm, "x", x.data(), xo.data(), x.size(), KF_INT32, KF_SUM, nullptr, &rx);
  check(kf_comm_set_strategy(comm, KF_STRATEGY_HIERARCHICAL) == KF_SUCCESS, "switch to hier",
        kf_comm_last_error(comm));
  if (!odd)
    kf_iall_reduce(comm, "x", x.data(), xo.data(), x.size(), KF_INT32, KF_SUM, nullptr, &rx);
  st = rx != nullptr ? kf_request_wait(rx) : KF_ERR_INTERNAL;
  const char* text = rx != nullptr ? kf_request_error(rx) : "not submitted";
  check(st == KF_ERR_INVALID_USAGE && std::strstr(text, "strategy") != nullptr,
        "submitted on different sides of a switch", text);
  kf_request_free(rx);

  // The communicator still works.
  int32_t one = 1, total = 0;
  st = kf_all_reduce(comm, &one, &total, 1, KF_INT32, KF_SUM);
  check(st == KF_SUCCESS && total == n, "blocking all_reduce afterwards",
        st == KF_SUCCESS ? nullptr : kf_comm_last_error(comm));
  kf_comm_destroy(comm);
  return fails == 0 ? 0 : 1;
}
