// Multi-process test of the topology C API: under `kfrun -np N` on one host,
// every rank checks host_count == 1, local_size == N, its local rank equals its
// rank, argument errors, and rank 0 writes the JSON dump to argv[1] (checked by
// topo_mp_test.sh). Public API only.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "kungfu/kungfu.h"

namespace {

int failures = 0;

void expect(bool ok, int rank, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "rank %d: FAILED: %s\n", rank, what);
    ++failures;
  }
}

}  // namespace

int main(int argc, char** argv) {
  kf_comm_t comm = nullptr;
  if (kf_comm_init_from_env(nullptr, &comm) != KF_SUCCESS) {
    std::fprintf(stderr, "init failed: %s\n", kf_comm_last_error(nullptr));
    return 1;
  }
  int rank = -1, size = -1;
  kf_comm_rank(comm, &rank);
  kf_comm_size(comm, &size);

  int hosts = 0, local_rank = -1, local_size = 0, host = -1, numa = -2;
  expect(kf_comm_host_count(comm, &hosts) == KF_SUCCESS && hosts == 1, rank, "host_count == 1");
  expect(kf_comm_local_size(comm, &local_size) == KF_SUCCESS && local_size == size, rank, "local_size == size");
  expect(kf_comm_local_rank(comm, &local_rank) == KF_SUCCESS && local_rank == rank, rank, "local_rank == rank");
  for (int r = 0; r < size; ++r) {
    expect(kf_comm_host_index(comm, r, &host) == KF_SUCCESS && host == 0, rank, "host_index == 0");
    expect(kf_comm_numa_node(comm, r, &numa) == KF_SUCCESS && numa >= -1, rank, "numa_node >= -1");
  }

  // Argument checks, with a last-error text naming the call.
  expect(kf_comm_host_count(comm, nullptr) == KF_ERR_INVALID_ARGUMENT, rank, "NULL count rejected");
  expect(std::strstr(kf_comm_last_error(comm), "kf_comm_host_count") != nullptr, rank, "error names the call");
  expect(kf_comm_host_index(comm, size, &host) == KF_ERR_INVALID_ARGUMENT, rank, "rank == size rejected");
  expect(kf_comm_numa_node(comm, -1, &numa) == KF_ERR_INVALID_ARGUMENT, rank, "rank -1 rejected");
  expect(kf_comm_local_rank(nullptr, &local_rank) == KF_ERR_INVALID_ARGUMENT, rank, "NULL comm rejected");
  size_t len = 0;
  expect(kf_comm_topology_dump(comm, static_cast<kf_topo_format_t>(7), nullptr, &len) ==
             KF_ERR_INVALID_ARGUMENT, rank, "bad format rejected");
  expect(kf_comm_topology_dump(comm, KF_TOPO_JSON, nullptr, nullptr) == KF_ERR_INVALID_ARGUMENT, rank,
         "NULL len rejected");

  // Size query, too-small buffer, then the dump.
  len = 0;
  expect(kf_comm_topology_dump(comm, KF_TOPO_JSON, nullptr, &len) == KF_SUCCESS && len > 1, rank, "size query");
  char small[4];
  size_t small_len = sizeof(small);
  expect(kf_comm_topology_dump(comm, KF_TOPO_JSON, small, &small_len) == KF_ERR_INVALID_ARGUMENT &&
             small_len == len, rank, "too-small buffer reports the size");
  std::string json(len, '\0');
  expect(kf_comm_topology_dump(comm, KF_TOPO_JSON, &json[0], &len) == KF_SUCCESS &&
             std::strlen(json.c_str()) + 1 == len, rank, "JSON dump");
  size_t tlen = 0;
  kf_comm_topology_dump(comm, KF_TOPO_TEXT, nullptr, &tlen);
  std::string text(tlen, '\0');
  expect(kf_comm_topology_dump(comm, KF_TOPO_TEXT, &text[0], &tlen) == KF_SUCCESS &&
             std::strstr(text.c_str(), "on 1 host") != nullptr, rank, "text dump");

  if (rank == 0) {
    std::fputs(text.c_str(), stdout);
    if (argc > 1) {
      std::FILE* f = std::fopen(argv[1], "w");
      expect(f != nullptr && std::fputs(json.c_str(), f) >= 0 && std::fclose(f) == 0, rank, "write JSON");
    }
  }
  // The layout still works as a communicator.
  int one = 1, sum = 0;
  expect(kf_all_reduce(comm, &one, &sum, 1, KF_INT32, KF_SUM) == KF_SUCCESS && sum == size, rank, "all_reduce");
  kf_comm_destroy(comm);
  if (failures == 0 && rank == 0) std::printf("topo_mp: rank 0 of %d OK\n", size);
  return failures == 0 ? 0 : 1;
}
