// Idle cost: after a warm-up all_reduce (shared memory and TCP connections
// set up, progress threads running), a communicator that is not used must
// not burn CPU. Each rank measures its own process CPU time (all threads)
// over an idle interval and fails if it exceeds 2% of the wall time.
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <vector>

#include "mp_common.h"

namespace {

double cpu_seconds() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

double wall_seconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

int main() {
  int rank = 0, size = 1;
  kf_comm_t comm = kfmp::init_or_die("mp_idle", &rank, &size);
  std::vector<float> x(1 << 20, 1.0f);
  if (kf_all_reduce(comm, x.data(), x.data(), x.size(), KF_FLOAT32, KF_SUM) != KF_SUCCESS ||
      kf_barrier(comm) != KF_SUCCESS) {
    std::printf("FAIL rank %d: warm-up failed: %s\n", rank, kf_comm_last_error(comm));
    return 1;
  }
  const double idle = 2.0;
  const double c0 = cpu_seconds(), w0 = wall_seconds();
  usleep(static_cast<useconds_t>(idle * 1e6));
  const double cpu = cpu_seconds() - c0, wall = wall_seconds() - w0;
  // A barrier after the idle interval proves the communicator still works.
  kf_status_t st = kf_barrier(comm);
  kf_comm_destroy(comm);
  const double pct = 100.0 * cpu / wall;
  const bool ok = st == KF_SUCCESS && pct <= 2.0;
  std::printf("%s rank %d: idle CPU %.3f s over %.2f s wall = %.2f%% (bound 2%%)\n",
              ok ? "PASS" : "FAIL", rank, cpu, wall, pct);
  return ok ? 0 : 1;
}
