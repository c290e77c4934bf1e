// Ranks that call all_reduce with different counts must get an error naming
// the problem (KF_ERR_INVALID_USAGE on the shared-memory path), never a hang
// or silently wrong data; later calls report the broken communicator.
#include <cstdio>
#include <vector>

#include "mp_common.h"

int main() {
  int rank = 0, size = 1;
  kf_comm_t comm = kfmp::init_or_die("mp_mismatch", &rank, &size);
  std::vector<float> v(1024, 1.0f);
  const uint64_t count = rank == 0 ? 10 : 20;
  kf_status_t st = kf_all_reduce(comm, v.data(), v.data(), count, KF_FLOAT32, KF_SUM);
  const char* text = kf_comm_last_error(comm);
  bool ok = st == KF_ERR_INVALID_USAGE;
  std::printf("%s rank %d: mismatched all_reduce -> %s: %s\n", ok ? "PASS" : "FAIL", rank,
              kf_status_string(st), text);
  kf_status_t later = kf_barrier(comm);
  bool ok2 = later != KF_SUCCESS;
  std::printf("%s rank %d: later barrier -> %s\n", ok2 ? "PASS" : "FAIL", rank,
              kf_status_string(later));
  kf_comm_destroy(comm);
  return ok && ok2 ? 0 : 1;
}
