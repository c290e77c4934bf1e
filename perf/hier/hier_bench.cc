// hier_bench: flat against hierarchical all_reduce in one run, side by side.
// For every size, the ranks switch strategy at run time
// (kf_comm_set_strategy) between KF_STRATEGY_FLAT and the strategy given by
// --vs (default hier), time the same all_reduce (float32 sum, out of place)
// under both, and print both times and their ratio. At --link-size the
// first rank of every host also reads its network interface's byte counters
// (/sys/class/net/IFACE/statistics, inside the emulated host's namespace)
// before and after every timed batch, and prints the median over batches of
// the bytes/s the host's link carried in each direction under both
// strategies.
//
// usage: hier_bench [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-w WARMUP]
//                   [--vs hier|tree|multi-tree|auto] [--link IFACE]
//                   [--link-size BYTES] [--rate-mbit MBIT] [-t SECONDS]
// The two strategies alternate batch by batch (a batch: enough operations
// for about 20 ms); -n is the least number of batches of each, more run while
// they fit in about -t seconds (default 1) per size. Times are medians.
// Sizes in bytes (suffixes K, M, G). Results are checked after timing:
// inputs are small integers, so every rank must get the exact sum.
#include <algorithm>
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
  int iters = 3;         // batches of each strategy, at least
  double seconds = 1.0;  // of timing per size, both strategies together
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
    case 'K':
    case 'k':
      v *= 1024;
      break;
    case 'M':
    case 'm':
      v *= 1024 * 1024;
      break;
    case 'G':
    case 'g':
      v *= 1024.0 * 1024 * 1024;
      break;
    default:
      break;
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

// One strategy's results at one size.
struct Timing {
  double median_us = 0;  // median over batches of the per-operation time (max over ranks)
  double mean_us = 0;
  double tx_bps = -1, rx_bps = -1;  // link bytes/s of this rank's host, -1 = not measured
  uint64_t wrong = 0;
};

kf_status_t set(kf_comm_t comm, kf_strategy_t s) {
  const kf_status_t st = kf_comm_set_strategy(comm, s);
  if (st != KF_SUCCESS) die("kf_comm_set_strategy", comm, st);
  return st;
}

double max_over_ranks(kf_comm_t comm, double v) {
  double out = v;
  const kf_status_t st = kf_all_reduce(comm, &v, &out, 1, KF_FLOAT64, KF_MAX);
  if (st != KF_SUCCESS) die("kf_all_reduce", comm, st);
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Times both strategies at one size. The two alternate batch by batch (a
// batch is enough operations for about 20 ms, at least one), so a burst of
// other load on the machine hits both alike; each batch starts after a
// barrier and its time is the slowest rank's. Results are checked once per
// strategy after timing.
void run_size(kf_comm_t comm, const Options& o, const kf_strategy_t strat[2], uint64_t count,
              bool measure_link, int rank, int size, Timing out[2]) {
  std::vector<float> in(count), res(count);
  for (uint64_t i = 0; i < count; ++i)
    in[i] = static_cast<float>((i + static_cast<uint64_t>(rank)) % 64);
  auto op = [&]() {
    const kf_status_t st = kf_all_reduce(comm, in.data(), res.data(), count, KF_FLOAT32, KF_SUM);
    if (st != KF_SUCCESS) die("kf_all_reduce", comm, st);
  };
  double one[2] = {0, 0};
  for (int k = 0; k < 2; ++k) {
    set(comm, strat[k]);
    for (int i = 0; i < o.warmup; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      op();
      one[k] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    one[k] = max_over_ranks(comm, one[k]);
  }
  const double pair = one[0] + one[1] > 0 ? one[0] + one[1] : 1e-3;
  int batch = static_cast<int>(0.02 / pair);
  if (batch < 1) batch = 1;
  int reps = static_cast<int>(o.seconds / (pair * batch));
  if (reps < o.iters) reps = o.iters;
  if (reps > 1000) reps = 1000;

  std::vector<double> per_op[2], tx_bps[2], rx_bps[2];
  bool link_ok = measure_link;
  for (int rep = 0; rep < reps; ++rep) {
    for (int k = 0; k < 2; ++k) {
      set(comm, strat[k]);
      const kf_status_t st = kf_barrier(comm);
      if (st != KF_SUCCESS) die("kf_barrier", comm, st);
      uint64_t tx0 = 0, rx0 = 0, tx1 = 0, rx1 = 0;
      if (link_ok) link_ok = link_bytes(o.link, &tx0, &rx0);
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < batch; ++i) op();
      const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (link_ok) link_ok = link_bytes(o.link, &tx1, &rx1);
      if (link_ok && t > 0) {
        tx_bps[k].push_back(static_cast<double>(tx1 - tx0) / t);
        rx_bps[k].push_back(static_cast<double>(rx1 - rx0) / t);
      }
      per_op[k].push_back(t * 1e6 / batch);
    }
  }
  for (int k = 0; k < 2; ++k) {
    // The slowest rank's time of every batch.
    std::vector<double> mx(per_op[k].size());
    const kf_status_t st =
        kf_all_reduce(comm, per_op[k].data(), mx.data(), mx.size(), KF_FLOAT64, KF_MAX);
    if (st != KF_SUCCESS) die("kf_all_reduce", comm, st);
    Timing& t = out[k];
    t.median_us = median(mx);
    double sum = 0;
    for (double v : mx) sum += v;
    t.mean_us = sum / static_cast<double>(mx.size());
    // The median batch's link rate: a batch slowed by other load on the
    // machine would drag a mean down.
    if (link_ok && !tx_bps[k].empty()) {
      t.tx_bps = median(tx_bps[k]);
      t.rx_bps = median(rx_bps[k]);
    }
    // Check: sum over ranks of (i + r) % 64.
    set(comm, strat[k]);
    op();
    uint64_t wrong = 0;
    for (uint64_t i = 0; i < count; ++i) {
      double want = 0;
      for (int r = 0; r < size; ++r)
        want += static_cast<double>((i + static_cast<uint64_t>(r)) % 64);
      if (static_cast<double>(res[i]) != want) ++wrong;
    }
    const kf_status_t st2 = kf_all_reduce(comm, &wrong, &t.wrong, 1, KF_UINT64, KF_SUM);
    if (st2 != KF_SUCCESS) die("kf_all_reduce", comm, st2);
  }
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
    if (a == "-b")
      o.min_bytes = parse_size(v);
    else if (a == "-e")
      o.max_bytes = parse_size(v);
    else if (a == "-f")
      o.factor = parse_size(v);
    else if (a == "-n")
      o.iters = std::atoi(v);
    else if (a == "-w")
      o.warmup = std::atoi(v);
    else if (a == "-t")
      o.seconds = std::atof(v);
    else if (a == "--link")
      o.link = v;
    else if (a == "--link-size")
      o.link_size = parse_size(v);
    else if (a == "--rate-mbit")
      o.rate_mbit = std::atof(v);
    else if (a == "--vs") {
      o.vs_name = v;
      const std::string s = v;
      if (s == "hier")
        o.vs = KF_STRATEGY_HIERARCHICAL;
      else if (s == "tree")
        o.vs = KF_STRATEGY_TREE;
      else if (s == "multi-tree")
        o.vs = KF_STRATEGY_MULTI_TREE;
      else if (s == "auto")
        o.vs = KF_STRATEGY_AUTO;
      else
        usage();
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
    std::printf(
        "# hier_bench: all_reduce float32 sum, out of place, %d ranks on %d hosts "
        "(%d on host 0), flat vs %s switched at run time, alternating batch by batch; "
        "time = median over >= %d batches (about %.1f s per size) of the time per "
        "operation, max over ranks; ratio = flat time / %s time\n",
        size, hosts, local_size, o.vs_name, o.iters, o.seconds, o.vs_name);
    std::printf("#%13s %12s %12s %10s %12s %10s %7s %7s\n", "size(B)", "count", "flat(us)",
                "flat GB/s", (std::string(o.vs_name) + "(us)").c_str(), "GB/s", "ratio", "#wrong");
  }
  bool all_ok = true;
  const kf_strategy_t strat[2] = {KF_STRATEGY_FLAT, o.vs};
  for (uint64_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= o.factor) {
    const uint64_t count = bytes / 4;
    const bool at_link = bytes == o.link_size;
    Timing t[2];
    run_size(comm, o, strat, count, at_link, rank, size, t);
    const Timing& flat = t[0];
    const Timing& other = t[1];
    all_ok = all_ok && flat.wrong == 0 && other.wrong == 0;
    if (rank == 0) {
      std::printf("%14" PRIu64 " %12" PRIu64 " %12.1f %10.3f %12.1f %10.3f %7.2f %7" PRIu64 "\n",
                  bytes, count, flat.median_us, static_cast<double>(bytes) / flat.median_us / 1e3,
                  other.median_us, static_cast<double>(bytes) / other.median_us / 1e3,
                  flat.median_us / other.median_us, flat.wrong + other.wrong);
      std::fflush(stdout);
    }
    if (at_link && local_rank == 0) {
      const double rate = o.rate_mbit * 1e6 / 8;
      char line[400];
      if (other.tx_bps < 0) {
        std::snprintf(line, sizeof line,
                      "# link: host %d: cannot read /sys/class/net/%s/statistics", host,
                      o.link.c_str());
      } else {
        std::snprintf(line, sizeof line,
                      "# link of host %d (%s) during the %" PRIu64
                      " B all_reduce: %s sent %.1f MB/s "
                      "(%.1f%% of %.0f Mbit/s), received %.1f MB/s; flat sent %.1f MB/s (%.1f%%), "
                      "received %.1f MB/s",
                      host, o.link.c_str(), bytes, o.vs_name, other.tx_bps / 1e6,
                      100 * other.tx_bps / rate, o.rate_mbit, other.rx_bps / 1e6, flat.tx_bps / 1e6,
                      100 * flat.tx_bps / rate, flat.rx_bps / 1e6);
      }
      std::printf("%s\n", line);
      std::fflush(stdout);
    }
  }
  kf_comm_destroy(comm);
  return all_ok ? 0 : 1;
}
