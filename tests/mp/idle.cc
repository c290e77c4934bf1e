// Idle cost: after a warm-up all_reduce (shared memory and TCP connections
// set up, progress threads running), a communicator that is not used must
// not burn CPU. Each rank measures its own process CPU time (all threads)
// over an idle interval and fails if it exceeds 2% of the wall time.
// With --straggler, before the interval every rank but 0 submits an
// asynchronous barrier that rank 0 never submits, and times it out (run
// with a short KF_TIMEOUT_MS and KF_STALL_WARN_MS): rank 0 keeps what its
// peers told of it, and its engine must still go to sleep. There each rank
// also counts the process's voluntary context switches (thread wake-ups)
// over the interval: at most 20 in 2 s.
#include <kungfu/async.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "mp_common.h"

namespace {

double cpu_seconds() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

long wakeups() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_nvcsw;
}

double wall_seconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

int main(int argc, char** argv) {
  const bool straggler = argc > 1 && std::strcmp(argv[1], "--straggler") == 0;
  int rank = 0, size = 1;
  kf_comm_t comm = kfmp::init_or_die("mp_idle", &rank, &size);
  std::vector<float> x(1 << 20, 1.0f);
  if (kf_all_reduce(comm, x.data(), x.data(), x.size(), KF_FLOAT32, KF_SUM) != KF_SUCCESS ||
      kf_barrier(comm) != KF_SUCCESS) {
    std::printf("FAIL rank %d: warm-up failed: %s\n", rank, kf_comm_last_error(comm));
    return 1;
  }
  if (straggler) {
    kf_request_t warm = nullptr;  // (the engine's threads start)
    if (kf_ibarrier(comm, "warm", nullptr, &warm) != KF_SUCCESS ||
        kf_request_wait(warm) != KF_SUCCESS) {
      std::printf("FAIL rank %d: an asynchronous barrier failed\n", rank);
      return 1;
    }
    kf_request_free(warm);
    kf_status_t timed_out = KF_ERR_TIMEOUT;
    if (rank != 0) {
      kf_request_t r = nullptr;
      timed_out = kf_ibarrier(comm, "straggle", nullptr, &r);
      if (timed_out == KF_SUCCESS) timed_out = kf_request_wait(r);
      kf_request_free(r);
    } else {
      usleep(800000);  // past the others' timeout: the barrier below has its own
    }
    const kf_status_t after = kf_barrier(comm);
    if (timed_out != KF_ERR_TIMEOUT || after != KF_SUCCESS) {
      std::printf("FAIL rank %d: the straggler's barrier %s, then a barrier %s\n", rank,
                  kf_status_string(timed_out), kf_status_string(after));
      return 1;
    }
    usleep(300000);  // the engine's looks after the failure end
  }
  const double idle = 2.0;
  const long n0 = wakeups();
  const double c0 = cpu_seconds(), w0 = wall_seconds();
  usleep(static_cast<useconds_t>(idle * 1e6));
  const double cpu = cpu_seconds() - c0, wall = wall_seconds() - w0;
  const long woke = wakeups() - n0 - 1;  // (-1: this thread's own sleep)
  // A barrier after the idle interval proves the communicator still works.
  kf_status_t st = kf_barrier(comm);
  kf_comm_destroy(comm);
  const double pct = 100.0 * cpu / wall;
  const bool ok = st == KF_SUCCESS && pct <= 2.0 && (!straggler || woke <= 20);
  std::printf(
      "%s rank %d: idle CPU %.3f s over %.2f s wall = %.2f%% (bound 2%%), %ld thread "
      "wake-ups%s\n",
      ok ? "PASS" : "FAIL", rank, cpu, wall, pct, woke, straggler ? " (bound 20)" : "");
  return ok ? 0 : 1;
}
