// hier_bench: flat against hierarchical all_reduce in one run, side by side.
// For every size, the ranks switch strategy at run time
// (kf_comm_set_strategy) and time the same all_reduce (float32 sum, out of
// place) under KF_STRATEGY_FLAT and under the strategy given by --vs
// (default hier), and print both times and their ratio. At --link-size the
// first rank of every host also reads its network interface's byte counters
// (/sys/class/net/IFACE/statistics, inside the emulated host's namespace)
// before and after the timed loop, and prints the bytes/s the host's link
// carried in each direction under both strategies.
//
// usage: hier_bench [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-w WARMUP]
//                   [--vs hier|tree|multi-tree|auto] [--link IFACE]
//                   [--link-size BYTES] [--rate-mbit MBIT] [-t SECONDS]
// -n is the least number of timed iterations; more run while they fit in
// about -t seconds (default 0.5) per size and strategy.
// Sizes in bytes (suffixes K, M, G). Results are checked after timing:
// inputs are small integers, so every rank must get the exact sum.
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "kungfu/kungfu.h"

namespace {

struct Options {
  uint64_t min_bytes = 4 << 10;
  uint64_t max_bytes = 256ull << 20;
  uint64_t factor = 4;
  int iters = 3;      // at least
  double seconds = 0.5;  // of timing per size and strategy, at most 10000 iterations
  int warmup = 2;
  kf_strategy_t vs = KF_STRATEGY_HIERARCHICAL;
  const char* vs_name = "hier";
  std::string link = "eth0";
  uint64_t link_size = 64ull << 20;
  double rate_mbit = 1000;
};

uint64_t parse_size(const char* s) {
  char* end = nullptr;
  double v = std::strtod(s, &end);
  switch (*end) {
    case 'K': case 'k': v *= 1024; break;
    case 'M': case 'm': v *= 1024 * 1024; break;
    case 'G': case 'g': v *= 1024.0 * 1024 * 1024; break;
    default: break;
  }
  return static_cast<uint64_t>(v);
}

void die(const char* what, kf_comm_t comm, kf_status_t st) {
  std::fprintf(stderr, "hier_bench: %s failed: %s: %s\n", what, kf_status_string(st),
               kf_comm_last_error(comm));
  std::exit(1);
}

// Bytes sent and received by IFACE so far; false if it cannot be read.
bool link_bytes(const std::string& iface, uint64_t* tx, uint64_t* rx) {
  std::ifstream t("/sys/class/net/" + iface + "/statistics/tx_bytes");
  std::ifstream r("/sys/class/net/" + iface + "/statistics/rx_bytes");
  return static_cast<bool>(t >> *tx) && static_cast<bool>(r >> *rx);
}

struct Timing {
  double us = 0;                 // per operation, max over ranks
  double tx_bps = -1, rx_bps = -1;  // link bytes/s of this rank's host, -1 = not measured
  uint64_t wrong = 0;
};

Timing run(kf_comm_t comm, const Options& o, kf_strategy_t strategy, uint64_t count,
           bool measure_link, int rank, int size) {
  kf_status_t st = kf_comm_set_strategy(comm, strategy);
  if (st != KF_SUCCESS) die("kf_comm_set_strategy", comm, st);
  std::vector<float> in(count), out(count);
  for (uint64_t i = 0; i < count; ++i) in[i] = static_cast<float>((i + static_cast<uint64_t>(rank)) % 64);
  auto w0 = std::chrono::steady_clock::now();
  for (int i = 0; i < o.warmup; ++i) {
    w0 = std::chrono::steady_clock::now();
    st = kf_all_reduce(comm, in.data(), out.data(), count, KF_FLOAT32, KF_SUM);
    if (st != KF_SUCCESS) die("kf_all_reduce", comm, st);
  }
  // Enough iterations for about --seconds of timing (the same on every rank).
  double one = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  double slowest = one;
  st = kf_all_reduce(comm, &one, &slowest, 1, KF_FLOAT64, KF_MAX);
  if (st != KF_SUCCESS) die("kf_all_reduce", comm, st);
  int iters = o.iters;
  if (o.warmup > 0 && slowest > 0) {
    const double want = o.seconds / slowest;
    if (want > iters) iters = want > 10000 ? 10000 : static_cast<int>(want);
  }
  st = kf_barrier(comm);
  if (st != KF_SUCCESS) die("kf_barrier", comm, st);
  uint64_t tx0 = 0, rx0 = 0, tx1 = 0, rx1 = 0;
  const bool link = measure_link && link_bytes(o.link, &tx0, &rx0);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) {
    st = kf_all_reduce(comm, in.data(), out.data(), count, KF_FLOAT32, KF_SUM);
    if (st != KF_SUCCESS) die("kf_all_reduce", comm, st);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  Timing t;
  if (link && link_bytes(o.link, &tx1, &rx1)) {
    t.tx_bps = static_cast<double>(tx1 - tx0) / secs;
    t.rx_bps = static_cast<double>(rx1 - rx0) / secs;
  }
  double mine = secs * 1e6 / iters;
  st = kf_all_reduce(comm, &mine, &t.us, 1, KF_FLOAT64, KF_MAX);
  if (st != KF_SUCCESS) die("kf_all_reduce", comm, st);
  // Check the last result: sum over ranks of (i + r) % 64.
  for (uint64_t i = 0; i < count; ++i) {
    double want = 0;
    for (int r = 0; r < size; ++r) want += static_cast<double>((i + static_cast<uint64_t>(r)) % 64);
    if (static_cast<double>(out[i]) != want) ++t.wrong;
  }
  uint64_t wrong = t.wrong;
  st = kf_all_reduce(comm, &wrong, &t.wrong, 1, KF_UINT64, KF_SUM);
  if (st != KF_SUCCESS) die("kf_all_reduce", comm, st);
  return t;
}

void usage() {
  std::fprintf(stderr,
               "usage: hier_bench [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-w WARMUP] "
               "[--vs hier|tree|multi-tree|auto] [--link IFACE] [--link-size BYTES] "
               "[--rate-mbit MBIT] [-t SECONDS]\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) usage();
    const char* v = argv[++i];
    if (a == "-b") o.min_bytes = parse_size(v);
    else if (a == "-e") o.max_bytes = parse_size(v);
    else if (a == "-f") o.factor = parse_size(v);
    else if (a == "-n") o.iters = std::atoi(v);
    else if (a == "-w") o.warmup = std::atoi(v);
    else if (a == "-t") o.seconds = std::atof(v);
    else if (a == "--link") o.link = v;
    else if (a == "--link-size") o.link_size = parse_size(v);
    else if (a == "--rate-mbit") o.rate_mbit = std::atof(v);
    else if (a == "--vs") {
      o.vs_name = v;
      const std::string s = v;
      if (s == "hier") o.vs = KF_STRATEGY_HIERARCHICAL;
      else if (s == "tree") o.vs = KF_STRATEGY_TREE;
      else if (s == "multi-tree") o.vs = KF_STRATEGY_MULTI_TREE;
      else if (s == "auto") o.vs = KF_STRATEGY_AUTO;
      else usage();
    } else {
      usage();
    }
  }
  if (o.iters < 1 || o.factor < 2 || o.min_bytes < 4) usage();

  kf_comm_t comm = nullptr;
  kf_status_t st = kf_comm_init_from_env(nullptr, &comm);
  if (st != KF_SUCCESS) die("kf_comm_init_from_env", nullptr, st);
  int rank = 0, size = 1, hosts = 1, local_rank = 0, local_size = 1, host = 0;
  kf_comm_rank(comm, &rank);
  kf_comm_size(comm, &size);
  kf_comm_host_count(comm, &hosts);
  kf_comm_local_rank(comm, &local_rank);
  kf_comm_local_size(comm, &local_size);
  kf_comm_host_index(comm, rank, &host);

  if (rank == 0) {
    std::printf("# hier_bench: all_reduce float32 sum, out of place, %d ranks on %d hosts "
                "(%d on host 0), flat vs %s switched at run time; time = mean of >= %d iterations "
                "(about %.1f s; after %d warm-up), max over ranks; ratio = flat time / %s time\n",
                size, hosts, local_size, o.vs_name, o.iters, o.seconds, o.warmup, o.vs_name);
    std::printf("#%13s %12s %12s %10s %12s %10s %7s %7s\n", "size(B)", "count", "flat(us)",
                "flat GB/s", (std::string(o.vs_name) + "(us)").c_str(), "GB/s", "ratio", "#wrong");
  }
  bool all_ok = true;
  std::vector<std::string> link_lines;
  for (uint64_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= o.factor) {
    const uint64_t count = bytes / 4;
    const bool at_link = bytes == o.link_size;
    const Timing flat = run(comm, o, KF_STRATEGY_FLAT, count, at_link, rank, size);
    const Timing other = run(comm, o, o.vs, count, at_link, rank, size);
    all_ok = all_ok && flat.wrong == 0 && other.wrong == 0;
    if (rank == 0) {
      std::printf("%14" PRIu64 " %12" PRIu64 " %12.1f %10.3f %12.1f %10.3f %7.2f %7" PRIu64 "\n",
                  bytes, count, flat.us, static_cast<double>(bytes) / flat.us / 1e3, other.us,
                  static_cast<double>(bytes) / other.us / 1e3, flat.us / other.us,
                  flat.wrong + other.wrong);
      std::fflush(stdout);
    }
    if (at_link && local_rank == 0) {
      const double rate = o.rate_mbit * 1e6 / 8;
      char line[400];
      if (other.tx_bps < 0) {
        std::snprintf(line, sizeof line, "# link: host %d: cannot read /sys/class/net/%s/statistics",
                      host, o.link.c_str());
      } else {
        std::snprintf(line, sizeof line,
                      "# link of host %d (%s) during the %" PRIu64 " B all_reduce: %s sent %.1f MB/s "
                      "(%.1f%% of %.0f Mbit/s), received %.1f MB/s; flat sent %.1f MB/s (%.1f%%), "
                      "received %.1f MB/s",
                      host, o.link.c_str(), bytes, o.vs_name, other.tx_bps / 1e6,
                      100 * other.tx_bps / rate, o.rate_mbit, other.rx_bps / 1e6,
                      flat.tx_bps / 1e6, 100 * flat.tx_bps / rate, flat.rx_bps / 1e6);
      }
      std::printf("%s\n", line);
      std::fflush(stdout);
    }
  }
  kf_comm_destroy(comm);
  return all_ok ? 0 : 1;
}
