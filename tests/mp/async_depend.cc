// A thread that waits for one request must come back as soon as that
// request is done, even while other operations it submitted still wait for
// peers that have not submitted them yet, and whose submission depends on
// this thread coming back (the application's own order: a blocking barrier).
//
// Every iteration, ranks >= 1 submit 'x' (an all_reduce), then four small
// gathers to rank 0 ('y0'..'y3': a non-root only sends, so its part of them
// finishes at once and then waits for rank 0's signature), wait for 'x',
// enter a blocking barrier, and only then wait for the gathers. Rank 0
// submits the gathers only after the barrier. An engine that lent the
// waiting thread to a gather (to run or finish it) would keep it from the
// barrier until the operation timeout: every result is checked exactly,
// and KF_TIMEOUT_MS (short) turns such a hang into a failure.
//
// Usage: mp_async_depend [--iters N]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mp_common.h"

int main(int argc, char** argv) {
  int iters = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--iters")) iters = std::atoi(argv[i + 1]);
  }
  int rank = 0, n = 1;
  kf_comm_t comm = kfmp::init_or_die("mp_async_depend", &rank, &n);
  constexpr int kGathers = 4;
  constexpr uint64_t kCount = 4;
  int fails = 0;
  auto fail = [&](int it, const std::string& what) {
    if (fails++ < 10) std::printf("FAIL rank %d iteration %d: %s\n", rank, it, what.c_str());
  };
  auto value = [](int it, int g, int r, uint64_t j) {
    return static_cast<int32_t>(it * 1000 + g * 100 + r * 10 + static_cast<int>(j));
  };

  for (int it = 0; it < iters && fails == 0; ++it) {
    int32_t mine = rank + it, sum = 0;
    std::vector<std::vector<int32_t>> send(kGathers), recv(kGathers);
    kf_request_t x = nullptr, y[kGathers] = {};
    auto submit_gathers = [&]() {
      for (int g = 0; g < kGathers; ++g) {
        send[g].resize(kCount);
        recv[g].assign(kCount * static_cast<uint64_t>(n), -1);
        for (uint64_t j = 0; j < kCount; ++j) send[g][j] = value(it, g, rank, j);
        std::string name = "y" + std::to_string(g);
        kf_status_t st = kf_igather(comm, name.c_str(), send[g].data(), recv[g].data(), kCount,
                                    KF_INT32, 0, nullptr, &y[g]);
        if (st != KF_SUCCESS) fail(it, "submit " + name + ": " + kf_comm_last_error(comm));
      }
    };
    kf_status_t st = kf_iall_reduce(comm, "x", &mine, &sum, 1, KF_INT32, KF_SUM, nullptr, &x);
    if (st != KF_SUCCESS) fail(it, std::string("submit x: ") + kf_comm_last_error(comm));
    if (rank != 0) submit_gathers();
    st = kf_request_wait(x);
    const int32_t want = n * it + n * (n - 1) / 2;
    if (st != KF_SUCCESS || sum != want) {
      fail(it, std::string("x -> ") + kf_status_string(st) + " " + kf_request_error(x) + ", sum " +
                   std::to_string(sum) + " (want " + std::to_string(want) + ")");
    }
    kf_request_free(x);
    st = kf_barrier(comm);
    if (st != KF_SUCCESS) fail(it, std::string("barrier: ") + kf_comm_last_error(comm));
    if (rank == 0) submit_gathers();
    for (int g = 0; g < kGathers; ++g) {
      if (y[g] == nullptr) continue;
      st = kf_request_wait(y[g]);
      if (st != KF_SUCCESS) fail(it, std::string("y -> ") + kf_request_error(y[g]));
      kf_request_free(y[g]);
      if (rank != 0) continue;
      for (int r = 0; r < n; ++r) {
        for (uint64_t j = 0; j < kCount; ++j) {
          if (recv[g][static_cast<uint64_t>(r) * kCount + j] != value(it, g, r, j)) {
            fail(it, "y" + std::to_string(g) + ": wrong element from rank " + std::to_string(r));
            break;
          }
        }
      }
    }
  }
  std::printf("%s rank %d: %d iterations\n", fails == 0 ? "PASS" : "FAIL", rank, iters);
  kf_comm_destroy(comm);
  return fails == 0 ? 0 : 1;
}
