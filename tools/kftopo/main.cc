// kftopo: prints the layout of a job (hosts, NUMA nodes, cores, GPUs, NICs,
// and every rank's host, local rank, NUMA node and CPUs) as text or JSON.
// Under a launcher (kfrun -np 4 kftopo --json) every rank joins the
// communicator and rank 0 prints; standalone it prints the one-rank view.
// Public C API only.
#include <cstdio>
#include <cstring>
#include <string>

#include "kungfu/kungfu.h"

namespace {

void usage(std::FILE* to) {
  std::fprintf(to,
               "usage: kftopo [--json] [--all]\n"
               "Prints the topology of the job this process belongs to (from kfrun, mpirun\n"
               "or srun), or of this host alone when started without a launcher.\n"
               "  --json     print JSON instead of text\n"
               "  --all      every rank prints (default: rank 0 only)\n"
               "  -h, --help print this help\n");
}

}  // namespace

int main(int argc, char** argv) {
  kf_topo_format_t format = KF_TOPO_TEXT;
  bool all = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0) {
      format = KF_TOPO_JSON;
    } else if (std::strcmp(argv[i], "--all") == 0) {
      all = true;
    } else if (std::strcmp(argv[i], "-h") == 0 || std::strcmp(argv[i], "--help") == 0) {
      usage(stdout);
      return 0;
    } else {
      std::fprintf(stderr, "kftopo: unknown argument %s\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }
  kf_comm_t comm = nullptr;
  kf_status_t st = kf_comm_init_from_env(nullptr, &comm);
  if (st != KF_SUCCESS) {
    std::fprintf(stderr, "kftopo: kf_comm_init_from_env: %s: %s\n", kf_status_string(st),
                 kf_comm_last_error(nullptr));
    return 1;
  }
  int rank = 0;
  kf_comm_rank(comm, &rank);
  size_t len = 0;
  st = kf_comm_topology_dump(comm, format, nullptr, &len);
  std::string text(len, '\0');
  if (st == KF_SUCCESS) st = kf_comm_topology_dump(comm, format, &text[0], &len);
  if (st != KF_SUCCESS) {
    std::fprintf(stderr, "kftopo: kf_comm_topology_dump: %s: %s\n", kf_status_string(st),
                 kf_comm_last_error(comm));
    kf_comm_destroy(comm);
    return 1;
  }
  int rc = 0;
  if (rank == 0 || all) {
    std::fputs(text.c_str(), stdout);
    rc = std::fflush(stdout) == 0 ? 0 : 1;
  }
  // Nobody leaves before rank 0 has its dump (a peer closing early is harmless
  // here, but keeps logs quiet).
  kf_barrier(comm);
  kf_comm_destroy(comm);
  return rc;
}
