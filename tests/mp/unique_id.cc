// NCCL-style bootstrap without a launcher: rank 0 creates a unique id, the id
// travels out of band (here: on the command line of the re-executed ranks), every rank calls
// kf_comm_init(id, size, rank), and an all_reduce checks the group. Also
// checks that a forged id (right address, wrong secret) is refused.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kungfu/kungfu.h"

namespace {

int run_rank(const kf_unique_id_t& id, int size, int rank) {
  kf_comm_t comm = nullptr;
  kf_status_t st = kf_comm_init(&id, size, rank, nullptr, &comm);
  if (st != KF_SUCCESS) {
    std::printf("FAIL rank %d: kf_comm_init: %s: %s\n", rank, kf_status_string(st),
                kf_comm_last_error(nullptr));
    return 1;
  }
  std::vector<int64_t> v(1000, rank + 1);
  st = kf_all_reduce(comm, v.data(), v.data(), v.size(), KF_INT64, KF_SUM);
  const int64_t want = static_cast<int64_t>(size) * (size + 1) / 2;
  bool ok = st == KF_SUCCESS;
  for (int64_t x : v) ok = ok && x == want;
  kf_comm_destroy(comm);
  std::printf("%s rank %d of %d: all_reduce via unique id\n", ok ? "PASS" : "FAIL", rank, size);
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const int size = 3;
  // A child rank: re-executed with the id's text (a fork of a process whose
  // rendezvous thread runs could inherit a lock held by that thread).
  if (argc == 4 && std::strcmp(argv[1], "--rank") == 0) {
    kf_unique_id_t child_id;
    std::memset(&child_id, 0, sizeof(child_id));
    std::strncpy(child_id.internal, argv[3], sizeof(child_id.internal) - 1);
    return run_rank(child_id, size, std::atoi(argv[2]));
  }
  kf_unique_id_t id;
  kf_status_t st = kf_get_unique_id(&id);
  if (st != KF_SUCCESS) {
    std::printf("FAIL kf_get_unique_id: %s: %s\n", kf_status_string(st), kf_comm_last_error(nullptr));
    return 1;
  }
  std::vector<pid_t> kids;
  for (int r = 1; r < size; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      std::string rank = std::to_string(r);
      execl("/proc/self/exe", argv[0], "--rank", rank.c_str(), id.internal, static_cast<char*>(nullptr));
      std::printf("FAIL rank %d: cannot re-execute %s\n", r, argv[0]);
      std::fflush(stdout);
      _exit(127);
    }
    kids.push_back(pid);
  }
  int failures = run_rank(id, size, 0);
  for (pid_t pid : kids) {
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failures;
  }

  // A forged id: a fresh rendezvous point, but the secret altered. The
  // stranger must be refused (it times out: the server never accepts it).
  kf_unique_id_t forged;
  if (kf_get_unique_id(&forged) != KF_SUCCESS) return 1;
  char* text = forged.internal;
  size_t len = std::strlen(text);
  text[len - 1] = text[len - 1] == '0' ? '1' : '0';  // last hex digit of the secret
  kf_config_t cfg = KF_CONFIG_INITIALIZER;
  cfg.timeout_ms = 1500;
  kf_comm_t comm = nullptr;
  st = kf_comm_init(&forged, 2, 1, &cfg, &comm);
  bool refused = st != KF_SUCCESS && comm == nullptr;
  std::printf("%s forged id refused: %s: %s\n", refused ? "PASS" : "FAIL", kf_status_string(st),
              kf_comm_last_error(nullptr));
  if (!refused) ++failures;
  std::printf("%d passed, %d failed\n", size + 1 - failures, failures);
  return failures == 0 ? 0 : 1;
}
