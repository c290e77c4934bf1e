// sparse_bench: dense against sparse all_reduce of float32 gradients, side
// by side in one run (run it under kfrun; on the emulated cluster see
// run_cluster.sh). For every size it times
//   dense ring   kf_all_reduce (the communicator's dense all_reduce)
//   dense hier   kf_sparse_all_reduce with KF_SPARSE_DENSE: the library's
//                dense strategy for the job's hosts (hierarchical all_reduce
//                on several hosts with several ranks each)
//   flat sparse  KF_SPARSE_FLAT at every density
//   hier sparse  KF_SPARSE_HIER at every density (needs equal hosts)
// and prints one row per (size, density) with the times (the slowest rank's,
// median over --iters) and the speed-ups over the best dense time.
//
// Memory: one buffer of the largest size per rank (in place), refilled with
// fresh gradient-like data before every timed call (not timed), plus a
// residual of the same size with --ef. 138M floats = 552 MB per buffer.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kungfu/kungfu.h"

namespace {

struct Args {
  std::vector<uint64_t> sizes{25600000, 138000000};
  std::vector<double> densities{0.01, 0.001};
  int iters = 3;
  int warmup = 1;
  bool ef = false;
  bool dense_ring = true;
  int threads = 0;  // MSTopK threads per rank (0 = the library's choice)
};

uint64_t parse_size(const std::string& s) {
  double v = std::atof(s.c_str());
  const char last = s.empty() ? ' ' : s.back();
  if (last == 'M' || last == 'm') v *= 1e6;
  if (last == 'K' || last == 'k') v *= 1e3;
  if (last == 'G' || last == 'g') v *= 1e9;
  return static_cast<uint64_t>(v);
}

template <typename T, typename F>
std::vector<T> split(const std::string& s, F parse) {
  std::vector<T> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = s.find(',', start);
    const std::string part = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!part.empty()) out.push_back(parse(part));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

void usage() {
  std::fprintf(stderr,
               "usage: sparse_bench [--sizes 25.6M,138M] [--densities 0.01,0.001] [--iters 3]\n"
               "                    [--warmup 1] [--ef] [--no-dense-ring] [--threads T]\n"
               "  --ef             keep a residual (error feedback; one more buffer per rank)\n"
               "  --no-dense-ring  skip kf_all_reduce (time only the hierarchical dense)\n"
               "  --threads T      MSTopK threads per rank (default 0: the library's choice)\n");
}

bool parse_args(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (k == "--sizes") {
      a->sizes = split<uint64_t>(value(), parse_size);
    } else if (k == "--densities") {
      a->densities = split<double>(value(), [](const std::string& s) { return std::atof(s.c_str()); });
    } else if (k == "--iters") {
      a->iters = std::max(1, std::atoi(value().c_str()));
    } else if (k == "--warmup") {
      a->warmup = std::max(0, std::atoi(value().c_str()));
    } else if (k == "--ef") {
      a->ef = true;
    } else if (k == "--threads") {
      a->threads = std::max(0, std::atoi(value().c_str()));
    } else if (k == "--no-dense-ring") {
      a->dense_ring = false;
    } else {
      usage();
      return false;
    }
  }
  return !a->sizes.empty() && !a->densities.empty();
}

// Gradient-like data: small values from a per-rank, per-fill xorshift
// stream, with a heavier tail on a few entries (as real gradients have).
void fill(float* x, uint64_t n, int rank, int round) {
  uint64_t s = 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(rank * 1000 + round + 1);
  for (uint64_t i = 0; i < n; ++i) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    const float u = static_cast<float>(s >> 40) * (1.0f / 16777216.0f) - 0.5f;  // [-0.5, 0.5)
    x[i] = (s & 0xff) == 0 ? u * 50.0f : u;
  }
}

struct Bench {
  kf_comm_t comm;
  int rank;
  int size;
  const Args* args;
  float* buf;
  float* residual;
};

// Times one configuration: the slowest rank's seconds, median over iters;
// < 0 when the call failed (the reason is printed).
double time_op(Bench& b, uint64_t n, const char* what, kf_sparse_algorithm_t algo, uint64_t k) {
  std::vector<double> times;
  const int total = b.args->warmup + b.args->iters;
  for (int it = 0; it < total; ++it) {
    fill(b.buf, n, b.rank, it);
    if (b.residual != nullptr) std::memset(b.residual, 0, n * sizeof(float));
    kf_barrier(b.comm);
    const auto t0 = std::chrono::steady_clock::now();
    kf_status_t st;
    if (algo == KF_SPARSE_AUTO) {  // the plain dense all_reduce
      st = kf_all_reduce(b.comm, b.buf, b.buf, n, KF_FLOAT32, KF_SUM);
    } else {
      kf_sparse_options_t o = KF_SPARSE_OPTIONS_INITIALIZER;
      o.algorithm = algo;
      o.threads = b.args->threads;
      st = kf_sparse_all_reduce(b.comm, b.buf, b.buf, n, KF_SUM, k, b.residual, &o);
    }
    double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (st != KF_SUCCESS) {
      std::fprintf(stderr, "rank %d: %s of %llu floats failed: %s: %s\n", b.rank, what,
                   static_cast<unsigned long long>(n), kf_status_string(st),
                   kf_comm_last_error(b.comm));
      return -1.0;
    }
    double slowest = 0.0;
    kf_all_reduce(b.comm, &dt, &slowest, 1, KF_FLOAT64, KF_MAX);
    if (it >= b.args->warmup) times.push_back(slowest);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

std::string fmt_size(uint64_t n) {
  char s[32];
  std::snprintf(s, sizeof(s), "%.1fM", static_cast<double>(n) / 1e6);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!parse_args(argc, argv, &args)) return 2;
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  kf_comm_t comm = nullptr;
  if (kf_comm_init_from_env(nullptr, &comm) != KF_SUCCESS) {
    std::fprintf(stderr, "sparse_bench: init failed: %s\n", kf_comm_last_error(nullptr));
    return 1;
  }
  int rank = 0, size = 1, hosts = 1, local_size = 1;
  kf_comm_rank(comm, &rank);
  kf_comm_size(comm, &size);
  kf_comm_host_count(comm, &hosts);
  kf_comm_local_size(comm, &local_size);
  const bool hier_ok = hosts * local_size == size;  // equal hosts (checked again by the library)

  const uint64_t nmax = *std::max_element(args.sizes.begin(), args.sizes.end());
  std::vector<float> buf(nmax), residual(args.ef ? nmax : 0);
  Bench b{comm, rank, size, &args, buf.data(), args.ef ? residual.data() : nullptr};

  if (rank == 0) {
    std::printf("# sparse_bench: %d ranks on %d host(s), %d iters (+%d warm-up), %s; times in s "
                "(slowest rank, median)\n",
                size, hosts, args.iters, args.warmup, args.ef ? "error feedback" : "no residual");
    std::printf("%-8s %-8s %10s %10s %11s %11s %12s %12s %10s\n", "size", "density", "dense_ring",
                "dense_hier", "flat_sparse", "hier_sparse", "dense/flat", "dense/hier", "flat/hier");
  }
  int failures = 0;
  for (uint64_t n : args.sizes) {
    const double ring = args.dense_ring ? time_op(b, n, "dense ring", KF_SPARSE_AUTO, 0) : -1.0;
    const double dhier = time_op(b, n, "dense hier", KF_SPARSE_DENSE, 1);
    double best_dense = dhier;
    if (ring > 0 && (best_dense <= 0 || ring < best_dense)) best_dense = ring;
    for (double dens : args.densities) {
      const uint64_t k = std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(dens * static_cast<double>(n))));
      const double flat = time_op(b, n, "flat sparse", KF_SPARSE_FLAT, k);
      const double hier = hier_ok ? time_op(b, n, "hier sparse", KF_SPARSE_HIER, k) : -1.0;
      failures += (ring < 0 && args.dense_ring) + (dhier < 0) + (flat < 0) + (hier_ok && hier < 0);
      if (rank == 0) {
        auto ratio = [](double a, double c) { return a > 0 && c > 0 ? a / c : 0.0; };
        std::printf("%-8s %-8g %10.3f %10.3f %11.3f %11.3f %11.2fx %11.2fx %9.2fx\n",
                    fmt_size(n).c_str(), dens, ring, dhier, flat, hier, ratio(best_dense, flat),
                    ratio(best_dense, hier), ratio(flat, hier));
      }
    }
  }
  kf_comm_destroy(comm);
  return failures == 0 ? 0 : 1;
}
