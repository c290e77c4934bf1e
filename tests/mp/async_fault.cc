// A peer dies while asynchronous operations are pending: the survivors'
// requests must all fail with KF_ERR_REMOTE (or KF_ERR_ABORTED), promptly
// and without a hang, whether their partitions were running (small ops wait
// for the dead rank's data) or still queued (large ops wait for its
// signature). The last rank is the victim: a forked child is the real rank
// and SIGKILLs itself; its parent exits 0 when it died as planned.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "mp_common.h"

int main() {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const char* size_env = std::getenv("KF_SIZE");
  const char* rank_env = std::getenv("KF_RANK");
  const int victim = size_env ? std::atoi(size_env) - 1 : -1;
  if (rank_env && std::atoi(rank_env) == victim) {
    const pid_t child = fork();
    if (child < 0) return 1;
    if (child > 0) {
      int status = 0;
      while (waitpid(child, &status, 0) < 0) {
      }
      bool ok = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
      std::printf("%s rank %d: worker %s\n", ok ? "PASS" : "FAIL", victim,
                  ok ? "died of SIGKILL as planned" : "did not die of SIGKILL");
      return ok ? 0 : 1;
    }
  }
  int rank = 0, n = 1;
  kf_comm_t comm = kfmp::init_or_die("mp_async_fault", &rank, &n);
  int32_t one = 1, sum = 0;
  kf_request_t r = nullptr;
  kf_status_t st = kf_iall_reduce(comm, "first", &one, &sum, 1, KF_INT32, KF_SUM, nullptr, &r);
  st = st == KF_SUCCESS ? kf_request_wait(r) : st;
  kf_request_free(r);
  if (st != KF_SUCCESS) {
    std::printf("FAIL rank %d: first op: %s\n", rank, kf_status_string(st));
    return 1;
  }
  if (rank == victim) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    raise(SIGKILL);
  }
  // Survivors: small (running) and large (queued) operations the victim
  // never submits.
  std::vector<std::vector<float>> bufs;
  std::vector<kf_request_t> reqs;
  for (int i = 0; i < 6; ++i) {
    size_t count = i % 2 == 0 ? 16 : (1 << 20);
    bufs.emplace_back(count, 1.0f);
    kf_request_t q = nullptr;
    std::string name = "pending" + std::to_string(i);
    st = kf_iall_reduce(comm, name.c_str(), bufs.back().data(), bufs.back().data(), count,
                        KF_FLOAT32, KF_SUM, nullptr, &q);
    if (st != KF_SUCCESS) {
      std::printf("FAIL rank %d: submit %s: %s\n", rank, name.c_str(), kf_status_string(st));
      return 1;
    }
    reqs.push_back(q);
  }
  auto t0 = std::chrono::steady_clock::now();
  int bad = 0;
  for (size_t i = 0; i < reqs.size(); ++i) {
    st = kf_request_wait(reqs[i]);
    if (st != KF_ERR_REMOTE && st != KF_ERR_ABORTED) {
      ++bad;
      std::printf("FAIL rank %d: pending%zu -> %s: %s\n", rank, i, kf_status_string(st),
                  kf_request_error(reqs[i]));
    }
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  bool ok = bad == 0 && s < 8.0;
  std::printf("%s rank %d: %zu pending requests failed with the peer's loss in %.2f s: %s\n",
              ok ? "PASS" : "FAIL", rank, reqs.size(), s, kf_request_error(reqs[0]));
  for (auto q : reqs) kf_request_free(q);
  kf_comm_destroy(comm);
  return ok ? 0 : 1;
}
