// Goodbye test (kfrun -np 3 or more, over TCP): a rank that destroys its
// communicator says goodbye, and receives that wait for it must fail at
// once with KF_ERR_REMOTE naming it, not after the operation timeout.
//
//   goodbye early   the last rank destroys its communicator right after a
//                   barrier and 300 ms. Rank 0 is already waiting in kf_recv
//                   from it; the other ranks post their kf_recv at 800 ms (after
//                   the goodbye arrived). All must fail within 2 s (the run
//                   uses KF_TIMEOUT_MS=30000) with "rank N closed its
//                   communicator".
//   goodbye legit   rank 0 sends 4 MiB to every other rank and destroys its
//                   communicator at once. The others receive 300 ms later:
//                   data that arrived before the goodbye must still be
//                   delivered intact, and the other ranks still talk to each
//                   other; only a receive for data rank 0 never sent fails
//                   (promptly).
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "mp_common.h"

namespace {

double now_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

constexpr double kPromptMs = 2000;

// Checks that a receive from `gone` failed promptly with the goodbye text.
bool check_prompt_failure(int rank, int gone, kf_status_t st, double ms, const std::string& err) {
  const std::string want = "rank " + std::to_string(gone) + " closed its communicator";
  const bool ok = st == KF_ERR_REMOTE && ms < kPromptMs && err.find(want) != std::string::npos;
  std::printf(
      "%s goodbye rank %d: receive from rank %d returned %s after %.0f ms (bound %.0f): \"%s\"\n",
      ok ? "PASS" : "FAIL", rank, gone, kf_status_string(st), ms, kPromptMs, err.c_str());
  return ok;
}

int early(kf_comm_t comm, int rank, int size) {
  const int victim = size - 1;
  if (rank == victim) {
    usleep(300 * 1000);  // rank 0 is waiting in kf_recv by now
    const kf_status_t st = kf_comm_destroy(comm);
    std::printf("%s goodbye rank %d: destroyed its communicator (%s)\n",
                st == KF_SUCCESS ? "PASS" : "FAIL", rank, kf_status_string(st));
    // Stay alive: the others must not learn of the goodbye from a closed socket.
    sleep(3);
    return st == KF_SUCCESS ? 0 : 1;
  }
  if (rank != 0) usleep(800 * 1000);  // post after the goodbye arrived
  int32_t x = 0;
  const double t0 = now_ms();
  const kf_status_t st = kf_recv(comm, &x, 1, KF_INT32, victim);
  const double ms = now_ms() - t0;
  const bool ok = check_prompt_failure(rank, victim, st, ms, kf_comm_last_error(comm));
  kf_comm_destroy(comm);
  return ok ? 0 : 1;
}

int legit(kf_comm_t comm, int rank, int size) {
  constexpr uint64_t kCount = (4u << 20) / sizeof(int32_t);
  std::vector<int32_t> v(kCount);
  if (rank == 0) {
    bool ok = true;
    for (int r = 1; r < size; ++r) {
      for (uint64_t i = 0; i < kCount; ++i)
        v[i] = static_cast<int32_t>(i * 7 + static_cast<uint64_t>(r));
      const kf_status_t st = kf_send(comm, v.data(), kCount, KF_INT32, r);
      if (st != KF_SUCCESS) {
        std::printf("FAIL goodbye rank 0: send to rank %d: %s: %s\n", r, kf_status_string(st),
                    kf_comm_last_error(comm));
        ok = false;
      }
    }
    const kf_status_t st = kf_comm_destroy(comm);
    std::printf("%s goodbye rank 0: sent and destroyed its communicator (%s)\n",
                ok && st == KF_SUCCESS ? "PASS" : "FAIL", kf_status_string(st));
    return ok && st == KF_SUCCESS ? 0 : 1;
  }
  usleep(300 * 1000);
  bool ok = true;
  kf_status_t st = kf_recv(comm, v.data(), kCount, KF_INT32, 0);
  uint64_t wrong = 0;
  for (uint64_t i = 0; i < kCount; ++i) {
    if (v[i] != static_cast<int32_t>(i * 7 + static_cast<uint64_t>(rank))) ++wrong;
  }
  if (st != KF_SUCCESS || wrong != 0) {
    std::printf(
        "FAIL goodbye rank %d: receive of data sent before the goodbye: %s, %llu wrong: %s\n", rank,
        kf_status_string(st), static_cast<unsigned long long>(wrong), kf_comm_last_error(comm));
    ok = false;
  }
  // The ranks that stay still talk to each other.
  if (size >= 3 && rank <= 2) {
    const int other = rank == 1 ? 2 : 1;
    int32_t mine = rank * 100, theirs = -1;
    kf_status_t s1 = rank == 1 ? kf_send(comm, &mine, 1, KF_INT32, other)
                               : kf_recv(comm, &theirs, 1, KF_INT32, other);
    kf_status_t s2 = rank == 1 ? kf_recv(comm, &theirs, 1, KF_INT32, other)
                               : kf_send(comm, &mine, 1, KF_INT32, other);
    if (s1 != KF_SUCCESS || s2 != KF_SUCCESS || theirs != other * 100) {
      std::printf(
          "FAIL goodbye rank %d: exchange with rank %d after rank 0 left: %s/%s, got %d: %s\n",
          rank, other, kf_status_string(s1), kf_status_string(s2), theirs,
          kf_comm_last_error(comm));
      ok = false;
    }
  }
  // Data rank 0 never sent: fails at once.
  int32_t x = 0;
  const double t0 = now_ms();
  st = kf_recv(comm, &x, 1, KF_INT32, 0);
  ok = check_prompt_failure(rank, 0, st, now_ms() - t0, kf_comm_last_error(comm)) && ok;
  kf_comm_destroy(comm);
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const bool is_early = argc > 1 && std::strcmp(argv[1], "early") == 0;
  int rank = 0, size = 1;
  kf_comm_t comm = kfmp::init_or_die("goodbye", &rank, &size);
  if (size < 2) {
    std::printf("FAIL: needs at least 2 ranks\n");
    return 1;
  }
  const kf_status_t st = kf_barrier(comm);
  if (st != KF_SUCCESS) {
    std::printf("FAIL goodbye rank %d: barrier: %s: %s\n", rank, kf_status_string(st),
                kf_comm_last_error(comm));
    return 1;
  }
  return is_early ? early(comm, rank, size) : legit(comm, rank, size);
}
