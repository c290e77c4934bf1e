// async_overhead: the cost of the asynchronous engine against blocking calls
// of the same sizes (run under kfrun, np >= 2).
//  - latency: 8-byte all_reduce, blocking vs kf_iall_reduce + kf_request_wait;
//  - throughput at equal priority: a "step" of K all_reduce operations of
//    B bytes each, blocking one after another vs all submitted then waited.
// Usage: async_overhead [-n iters] [-k ops per step] [-b bytes per op]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kungfu/kungfu.h"

namespace {

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void check(kf_status_t st, const char* what) {
  if (st != KF_SUCCESS) {
    std::fprintf(stderr, "async_overhead: %s failed: %s\n", what, kf_status_string(st));
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int iters = 2000, k = 16;
  size_t bytes = 1 << 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "-n")) iters = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "-k")) k = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "-b")) bytes = std::strtoull(argv[i + 1], nullptr, 10);
  }
  kf_comm_t comm = nullptr;
  check(kf_comm_init_from_env(nullptr, &comm), "init");
  int rank = 0;
  kf_comm_rank(comm, &rank);

  // Latency, 8 bytes.
  double x = 1, y = 0;
  for (int i = 0; i < 100; ++i) check(kf_all_reduce(comm, &x, &y, 1, KF_FLOAT64, KF_SUM), "warm-up");
  double t0 = now_us();
  for (int i = 0; i < iters; ++i) check(kf_all_reduce(comm, &x, &y, 1, KF_FLOAT64, KF_SUM), "all_reduce");
  double blocking = (now_us() - t0) / iters;
  for (int i = 0; i < 100; ++i) {
    kf_request_t r;
    check(kf_iall_reduce(comm, "lat", &x, &y, 1, KF_FLOAT64, KF_SUM, nullptr, &r), "iall_reduce");
    check(kf_request_wait(r), "wait");
    kf_request_free(r);
  }
  t0 = now_us();
  for (int i = 0; i < iters; ++i) {
    kf_request_t r;
    check(kf_iall_reduce(comm, "lat", &x, &y, 1, KF_FLOAT64, KF_SUM, nullptr, &r), "iall_reduce");
    check(kf_request_wait(r), "wait");
    kf_request_free(r);
  }
  double async = (now_us() - t0) / iters;

  // Throughput of a step of k equal-priority operations.
  const size_t count = bytes / 4;
  std::vector<std::vector<float>> bufs(static_cast<size_t>(k), std::vector<float>(count, 1.0f));
  const int steps = std::max(3, iters / 200);
  t0 = now_us();
  for (int s = 0; s < steps; ++s)
    for (auto& b : bufs) check(kf_all_reduce(comm, b.data(), b.data(), count, KF_FLOAT32, KF_SUM), "step");
  double step_blocking = (now_us() - t0) / steps;
  std::vector<kf_request_t> reqs(static_cast<size_t>(k));
  t0 = now_us();
  for (int s = 0; s < steps; ++s) {
    for (int j = 0; j < k; ++j) {
      std::string name = "g" + std::to_string(j);
      check(kf_iall_reduce(comm, name.c_str(), bufs[j].data(), bufs[j].data(), count, KF_FLOAT32,
                           KF_SUM, nullptr, &reqs[static_cast<size_t>(j)]),
            "istep");
    }
    check(kf_request_wait_all(reqs.size(), reqs.data()), "wait_all");
    for (auto r : reqs) kf_request_free(r);
  }
  double step_async = (now_us() - t0) / steps;
  if (rank == 0) {
    std::printf("8 B all_reduce latency: blocking %.1f us, async %.1f us (x%.2f)\n", blocking, async,
                async / blocking);
    std::printf("step of %d x %zu B all_reduce: blocking %.0f us, async %.0f us (%+.1f%%)\n", k, bytes,
                step_blocking, step_async, 100.0 * (step_async - step_blocking) / step_blocking);
  }
  kf_comm_destroy(comm);
  return 0;
}
