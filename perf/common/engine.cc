#include "engine.h"

#include <getopt.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "data.h"

namespace kfp {

namespace {

struct Options {
  size_t min_bytes = 32u << 20;
  size_t max_bytes = 32u << 20;
  size_t step_bytes = 1u << 20;
  double step_factor = 1.0;
  int iters = 20;
  int warmup = 5;
  int check = 1;
  std::vector<kf_dtype_t> dtypes{KF_FLOAT32};
  std::vector<kf_op_t> ops{KF_SUM};
  int root = 0;
};

// Frees with free(); the engine owns a handful of large buffers.
struct Buffer {
  void* p = nullptr;
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { std::free(p); }
  bool alloc(size_t bytes) {
    std::free(p);
    p = nullptr;
    if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0) return false;
    std::memset(p, 0, bytes);  // touch every page before timing
    return true;
  }
  char* bytes() { return static_cast<char*>(p); }
};

double now_seconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

bool parse_size(const char* s, size_t* out) {
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (errno != 0 || end == s) return false;
  unsigned long long mul = 1;
  switch (*end) {
    case '\0':
      break;
    case 'k':
    case 'K':
      mul = 1ull << 10;
      ++end;
      break;
    case 'm':
    case 'M':
      mul = 1ull << 20;
      ++end;
      break;
    case 'g':
    case 'G':
      mul = 1ull << 30;
      ++end;
      break;
    default:
      return false;
  }
  if (*end == 'B' || *end == 'b') ++end;
  if (*end != '\0') return false;
  if (mul != 1 && v > (~0ull) / mul) return false;
  *out = static_cast<size_t>(v * mul);
  return true;
}

bool parse_int(const char* s, int lo, int* out) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < lo || v > 1000000000L) return false;
  *out = static_cast<int>(v);
  return true;
}

void usage(const char* prog) {
  std::fprintf(stderr,
               "usage: %s [options]\n"
               "  -b minbytes   smallest size, with K/M/G suffix (default 32M)\n"
               "  -e maxbytes   largest size (default 32M)\n"
               "  -f factor     multiply the size by this factor each step\n"
               "  -i stepbytes  else add this many bytes each step (default 1M)\n"
               "  -n iters      timed iterations per size (default 20)\n"
               "  -w iters      warm-up iterations per size (default 5)\n"
               "  -c 0|1        check results (default 1)\n"
               "  -d dtype      int8 uint8 int32 uint32 int64 uint64 half|float16 bfloat16\n"
               "                float|float32 double|float64, or all (default float)\n"
               "  -o op         sum prod min max avg, or all (default sum)\n"
               "  -r root       root rank for rooted collectives (default 0)\n",
               prog);
}

// Returns 0 to run, 1 for a usage error, 2 for -h.
int parse_args(int argc, char** argv, Options* o) {
  int c;
  while ((c = getopt(argc, argv, "b:e:f:i:n:w:c:d:o:r:h")) != -1) {
    bool ok = true;
    switch (c) {
      case 'b':
        ok = parse_size(optarg, &o->min_bytes);
        break;
      case 'e':
        ok = parse_size(optarg, &o->max_bytes);
        break;
      case 'i':
        ok = parse_size(optarg, &o->step_bytes);
        break;
      case 'f': {
        char* end = nullptr;
        o->step_factor = std::strtod(optarg, &end);
        ok = end != optarg && *end == '\0' && o->step_factor >= 1.0;
        break;
      }
      case 'n':
        ok = parse_int(optarg, 1, &o->iters);
        break;
      case 'w':
        ok = parse_int(optarg, 0, &o->warmup);
        break;
      case 'c':
        ok = parse_int(optarg, 0, &o->check);
        break;
      case 'r':
        ok = parse_int(optarg, 0, &o->root);
        break;
      case 'd':
        o->dtypes.clear();
        if (std::strcmp(optarg, "all") == 0) {
          for (int t = 0; t < KF_DTYPE_COUNT; ++t) o->dtypes.push_back(static_cast<kf_dtype_t>(t));
        } else {
          kf_dtype_t t;
          ok = kft::parse_dtype(optarg, &t);
          if (ok) o->dtypes.push_back(t);
        }
        break;
      case 'o':
        o->ops.clear();
        if (std::strcmp(optarg, "all") == 0) {
          for (int op = 0; op < KF_OP_COUNT; ++op) o->ops.push_back(static_cast<kf_op_t>(op));
        } else {
          kf_op_t op;
          ok = kft::parse_op(optarg, &op);
          if (ok) o->ops.push_back(op);
        }
        break;
      case 'h':
        usage(argv[0]);
        return 2;
      default:
        usage(argv[0]);
        return 1;
    }
    if (!ok) {
      std::fprintf(stderr, "%s: bad value for -%c: '%s'\n", argv[0], c, optarg);
      return 1;
    }
  }
  if (optind != argc) {
    std::fprintf(stderr, "%s: unexpected argument '%s'\n", argv[0], argv[optind]);
    return 1;
  }
  if (o->min_bytes > o->max_bytes) {
    std::fprintf(stderr, "%s: -b must not exceed -e\n", argv[0]);
    return 1;
  }
  if (o->step_factor <= 1.0 && o->step_bytes == 0) {
    std::fprintf(stderr, "%s: need -f > 1 or -i > 0\n", argv[0]);
    return 1;
  }
  return 0;
}

const char* time_format(double us) {
  return us >= 1e4 ? "%7.0f" : us >= 100 ? "%7.1f" : "%7.2f";
}

// Runs one collective for every sweep size and prints rows; accumulates the
// busbw sum and the number of wrong elements. Returns false on a library error.
class Sweep {
 public:
  Sweep(const CollDesc& coll, const Options& o, kf_comm_t comm, int rank, int nranks)
      : coll_(coll), o_(o), comm_(comm), rank_(rank), nranks_(nranks) {}

  bool run(kf_dtype_t dtype, kf_op_t op);
  uint64_t wrong_total() const { return wrong_total_; }
  double busbw_sum() const { return busbw_sum_; }
  int rows() const { return rows_; }

 private:
  bool fail(const char* what, kf_status_t st) const {
    std::fprintf(stderr, "%s_perf: rank %d: %s failed: %s: %s\n", coll_.name, rank_, what,
                 kf_status_string(st), kf_comm_last_error(comm_));
    return false;
  }
  bool one(RunParams& p, bool inplace, double* time_us, uint64_t* wrong);

  const CollDesc& coll_;
  const Options& o_;
  kf_comm_t comm_;
  int rank_;
  int nranks_;
  Buffer send_, recv_, expected_;
  uint64_t wrong_total_ = 0;
  double busbw_sum_ = 0;
  int rows_ = 0;
  uint32_t salt_ = 1;
};

bool Sweep::one(RunParams& p, bool inplace, double* time_us, uint64_t* wrong) {
  const size_t esize = kft::element_size(p.dtype);
  const Counts& c = p.counts;
  char* sendp = send_.bytes();
  char* recvp = recv_.bytes();
  if (inplace) {
    // One buffer holds both, at the position kungfu.h documents.
    if (c.inplace_send_in_recv) {
      recvp = send_.bytes();
      sendp = recvp + c.inplace_offset * esize;
    } else {
      sendp = send_.bytes();
      recvp = sendp + c.inplace_offset * esize;
    }
  }
  coll_.init_input(p, sendp);
  kf_status_t st;
  for (int i = 0; i < o_.warmup; ++i)
    if ((st = coll_.run(p, sendp, recvp)) != KF_SUCCESS) return fail(coll_.name, st);
  if ((st = kf_barrier(comm_)) != KF_SUCCESS) return fail("kf_barrier", st);
  const double t0 = now_seconds();
  for (int i = 0; i < o_.iters; ++i)
    if ((st = coll_.run(p, sendp, recvp)) != KF_SUCCESS) return fail(coll_.name, st);
  double local_us = (now_seconds() - t0) * 1e6 / o_.iters;
  // The slowest rank defines the time of a collective.
  if ((st = kf_all_reduce(comm_, &local_us, time_us, 1, KF_FLOAT64, KF_MAX)) != KF_SUCCESS)
    return fail("kf_all_reduce(time)", st);

  uint64_t local_wrong = 0;
  if (o_.check) {
    p.salt = ++salt_;
    coll_.init_input(p, sendp);
    if ((st = coll_.run(p, sendp, recvp)) != KF_SUCCESS) return fail(coll_.name, st);
    if (coll_.fill_expected(p, expected_.p)) {
      uint64_t first_bad = 0;
      local_wrong = kft::count_wrong(recvp, expected_.p, c.recv, p.dtype, p.op, &first_bad);
      if (local_wrong) {
        std::fprintf(stderr,
                     "%s_perf: rank %d: %s %s count %" PRIu64 " %s: %" PRIu64
                     " wrong, first at %" PRIu64 ": expected %g got %g\n",
                     coll_.name, rank_, kft::dtype_name(p.dtype), kft::op_name(p.op), c.param,
                     inplace ? "in-place" : "out-of-place", local_wrong, first_bad,
                     kft::element_as_double(expected_.p, first_bad, p.dtype),
                     kft::element_as_double(recvp, first_bad, p.dtype));
      }
    }
    if ((st = kf_all_reduce(comm_, &local_wrong, wrong, 1, KF_UINT64, KF_SUM)) != KF_SUCCESS)
      return fail("kf_all_reduce(#wrong)", st);
  } else {
    *wrong = 0;
  }
  return true;
}

bool Sweep::run(kf_dtype_t dtype, kf_op_t op) {
  const size_t esize = kft::element_size(dtype);
  const Counts maxc = coll_.get_counts(o_.max_bytes, esize, nranks_);
  const uint64_t maxelems = maxc.send > maxc.recv ? maxc.send : maxc.recv;
  if (!send_.alloc(maxelems * esize) || !recv_.alloc(maxc.recv * esize) ||
      (o_.check && !expected_.alloc(maxc.recv * esize))) {
    std::fprintf(stderr, "%s_perf: rank %d: out of memory\n", coll_.name, rank_);
    return false;
  }
  for (size_t bytes = o_.min_bytes; bytes <= o_.max_bytes;) {
    RunParams p{comm_, rank_, nranks_, dtype, op, o_.root, coll_.get_counts(bytes, esize, nranks_),
                0};
    const size_t size = (p.counts.send > p.counts.recv ? p.counts.send : p.counts.recv) * esize;
    char line[256];
    int len =
        std::snprintf(line, sizeof line, "%12zu  %12" PRIu64 "  %8s  %6s  %6d", size,
                      p.counts.param, kft::dtype_name(dtype),
                      coll_.uses_op ? kft::op_name(op) : "none", coll_.uses_root ? o_.root : -1);
    for (int inplace = 0; inplace < 2; ++inplace) {
      double time_us = 0;
      uint64_t wrong = 0;
      if (!one(p, inplace != 0, &time_us, &wrong)) return false;
      const double algbw = time_us > 0 ? static_cast<double>(size) / time_us / 1e3 : 0.0;  // GB/s
      const double busbw = algbw * coll_.bus_factor(nranks_);
      char t[32], w[32];
      std::snprintf(t, sizeof t, time_format(time_us), time_us);
      if (o_.check)
        std::snprintf(w, sizeof w, "%" PRIu64, wrong);
      else
        std::snprintf(w, sizeof w, "N/A");
      len += std::snprintf(line + len, sizeof line - static_cast<size_t>(len),
                           "  %7s  %6.2f  %6.2f  %6s", t, algbw, busbw, w);
      wrong_total_ += wrong;
      busbw_sum_ += busbw;
      ++rows_;
    }
    if (rank_ == 0) {
      std::printf("%s\n", line);
      std::fflush(stdout);
    }
    const size_t next = o_.step_factor > 1.0
                            ? static_cast<size_t>(static_cast<double>(bytes) * o_.step_factor)
                            : bytes + o_.step_bytes;
    if (next <= bytes) break;  // factor too small to move, or overflow
    bytes = next;
  }
  return true;
}

struct RankInfo {
  int32_t pid;
  char host[60];
};

}  // namespace

int run_perf(const CollDesc& coll, int argc, char** argv) {
  Options o;
  if (int rc = parse_args(argc, argv, &o)) return rc == 2 ? 0 : 2;

  kf_comm_t comm = nullptr;
  kf_status_t st = kf_comm_init_from_env(nullptr, &comm);
  if (st != KF_SUCCESS) {
    std::fprintf(stderr, "%s_perf: kf_comm_init_from_env failed: %s: %s\n", coll.name,
                 kf_status_string(st), kf_comm_last_error(nullptr));
    return 1;
  }
  int rank = 0, nranks = 1;
  kf_comm_rank(comm, &rank);
  kf_comm_size(comm, &nranks);
  if (coll.uses_root && o.root >= nranks) {
    if (rank == 0)
      std::fprintf(stderr, "%s_perf: root %d >= nranks %d\n", coll.name, o.root, nranks);
    kf_comm_destroy(comm);
    return 2;
  }

  RankInfo me{};
  me.pid = static_cast<int32_t>(getpid());
  gethostname(me.host, sizeof me.host - 1);
  std::vector<RankInfo> all(static_cast<size_t>(nranks));
  st = kf_all_gather(comm, &me, all.data(), sizeof me, KF_UINT8);
  if (st != KF_SUCCESS) {
    std::fprintf(stderr, "%s_perf: rank %d: kf_all_gather(rank info) failed: %s: %s\n", coll.name,
                 rank, kf_status_string(st), kf_comm_last_error(comm));
    kf_comm_destroy(comm);
    return 1;
  }
  if (rank == 0) {
    const int v = kf_get_version();
    std::printf("# %s_perf (libkungfu %d.%d.%d): nranks %d, device none (CPU, host memory)\n",
                coll.name, v / 10000, v / 100 % 100, v % 100, nranks);
    std::printf(
        "#  minBytes %zu maxBytes %zu step: %g(%s) warmup iters: %d iters: %d validation: %d\n",
        o.min_bytes, o.max_bytes,
        o.step_factor > 1.0 ? o.step_factor : static_cast<double>(o.step_bytes),
        o.step_factor > 1.0 ? "factor" : "bytes", o.warmup, o.iters, o.check);
    std::printf(
        "#  time: mean over iterations on each rank, max over ranks; GB = 1e9 bytes;"
        " busbw = algbw * %g\n#\n# Using devices\n",
        coll.bus_factor(nranks));
    for (int r = 0; r < nranks; ++r)
      std::printf("#  Rank %2d Pid %6d on %10.59s device none\n", r,
                  static_cast<int>(all[static_cast<size_t>(r)].pid),
                  all[static_cast<size_t>(r)].host);
    std::printf("#\n");
    std::printf("# %10s  %12s  %8s  %6s  %6s  %-33s  %-33s\n", "", "", "", "", "",
                "           out-of-place", "             in-place");
    std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size",
                "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time",
                "algbw", "busbw", "#wrong");
    std::printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)",
                "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
                "(GB/s)", "");
    std::fflush(stdout);
  }

  Sweep sweep(coll, o, comm, rank, nranks);
  bool ok = true;
  for (kf_dtype_t t : o.dtypes) {
    for (kf_op_t op : o.ops) {
      ok = sweep.run(t, op);
      if (!ok || !coll.uses_op) break;
    }
    if (!ok) break;
  }
  if (ok && rank == 0) {
    std::printf("# Out of bounds values : %" PRIu64 " %s\n", sweep.wrong_total(),
                sweep.wrong_total() ? "FAILED" : "OK");
    std::printf("# Avg bus bandwidth    : %g \n#\n",
                sweep.rows() ? sweep.busbw_sum() / sweep.rows() : 0.0);
    std::fflush(stdout);
  }
  const kf_status_t dst = kf_comm_destroy(comm);
  if (dst != KF_SUCCESS) {
    std::fprintf(stderr, "%s_perf: rank %d: kf_comm_destroy failed: %s\n", coll.name, rank,
                 kf_status_string(dst));
    ok = false;
  }
  if (!ok) return 1;
  return sweep.wrong_total() ? 1 : 0;
}

}  // namespace kfp
