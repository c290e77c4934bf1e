#include "engine.h"

#include <getopt.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/json.h"
#include "data.h"

namespace kfp {

namespace {

// Cold-cache mode: every operation gets fresh buffers carved from a pool of
// at least this many bytes per rank (far above any last-level cache), one
// page-aligned slice after another, wrapping around.
constexpr size_t kColdPoolBytes = size_t{256} << 20;
constexpr size_t kColdAlign = 4096;

// Average modes (-a), as nccl-tests: how the per-rank times combine.
const char* const kAverageNames[4] = {"rank 0", "mean over ranks", "min over ranks",
                                      "max over ranks"};

struct Options {
  size_t min_bytes = 32u << 20;
  size_t max_bytes = 32u << 20;
  size_t step_bytes = 1u << 20;
  double step_factor = 1.0;
  int iters = 20;
  int warmup = 5;
  int check = 1;  // checked iterations per size and variant (0 = no check)
  int average = 3;
  int agg_iters = 1;
  std::vector<kf_dtype_t> dtypes{KF_FLOAT32};
  std::vector<kf_op_t> ops{KF_SUM};
  int root = 0;
  bool all_roots = false;
  std::string json;  // -J FILE
  bool cold = false;
  double min_bw = -1;  // KF_PERF_MIN_BW, GB/s; < 0 = no gate
};

// 64-byte aligned, page-touched memory that grows on demand.
class Buffer {
 public:
  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { std::free(p_); }
  bool ensure(size_t bytes) {
    if (p_ && bytes <= cap_) return true;
    std::free(p_);
    p_ = nullptr;
    cap_ = 0;
    const size_t n = bytes ? bytes : 64;
    if (posix_memalign(&p_, kColdAlign, n) != 0) {
      p_ = nullptr;
      return false;
    }
    std::memset(p_, 0, n);  // touch every page before timing
    cap_ = n;
    return true;
  }
  char* bytes() { return static_cast<char*>(p_); }
  void* get() { return p_; }
  size_t capacity() const { return cap_; }

 private:
  void* p_ = nullptr;
  size_t cap_ = 0;
};

size_t round_up(size_t v, size_t a) {
  return (v + a - 1) / a * a;
}

double now_seconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

bool parse_size(const char* s, size_t* out) {
  errno = 0;
  char* end = nullptr;
  if (*s == '-') return false;
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

bool parse_int(const char* s, int lo, int hi, int* out) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) return false;
  *out = static_cast<int>(v);
  return true;
}

void usage(const char* prog, FILE* f) {
  std::fprintf(
      f,
      "usage: %s [options]   (run under kfrun -np N, or mpirun -np N)\n"
      "  -b, --minbytes N      smallest size in bytes, K/M/G suffix (default 32M)\n"
      "  -e, --maxbytes N      largest size (default 32M)\n"
      "  -f, --stepfactor F    multiply the size by F each step\n"
      "  -i, --stepbytes N     else add N bytes each step (default 1M)\n"
      "  -n, --iters N         timed iterations per size (default 20)\n"
      "  -w, --warmup_iters N  warm-up iterations per size (default 5)\n"
      "  -m, --agg_iters N     operations run back to back per timed iteration\n"
      "                        (default 1); the time column is per operation\n"
      "  -c, --check N         checked iterations per size, 0 = no check (default 1)\n"
      "  -d, --datatype T      int8 uint8 int32 uint32 int64 uint64 half|float16\n"
      "                        bfloat16 float|float32 double|float64, or all (default float)\n"
      "  -o, --op OP           sum prod min max avg, or all (default sum)\n"
      "  -r, --root R          root rank for rooted collectives, or all (default 0)\n"
      "  -a, --average M       combine the per-rank times: 0 = rank 0, 1 = mean,\n"
      "                        2 = min, 3 = max (default 3; nccl-tests' default is 1)\n"
      "  -J, --json FILE       also write the results as JSON to FILE (rank 0)\n"
      "  -C, --cold            cold cache: fresh buffers for every operation, rotating\n"
      "                        through a %zu MiB pool per rank\n"
      "  -h, --help            this help\n"
      "environment:\n"
      "  KF_PERF_MIN_BW=X      fail (exit 1) when the average bus bandwidth is below\n"
      "                        0.9 * X GB/s (like nccl-tests' NCCL_TESTS_MIN_BW)\n"
      "exit status: 0 ok; 1 wrong results, library error or bandwidth gate; 2 usage\n",
      prog, kColdPoolBytes >> 20);
}

// Returns 0 to run, 1 for a usage error, 2 for -h.
int parse_args(int argc, char** argv, Options* o) {
  static const option kLong[] = {{"minbytes", required_argument, nullptr, 'b'},
                                 {"maxbytes", required_argument, nullptr, 'e'},
                                 {"stepbytes", required_argument, nullptr, 'i'},
                                 {"stepfactor", required_argument, nullptr, 'f'},
                                 {"iters", required_argument, nullptr, 'n'},
                                 {"warmup_iters", required_argument, nullptr, 'w'},
                                 {"agg_iters", required_argument, nullptr, 'm'},
                                 {"check", required_argument, nullptr, 'c'},
                                 {"datatype", required_argument, nullptr, 'd'},
                                 {"op", required_argument, nullptr, 'o'},
                                 {"root", required_argument, nullptr, 'r'},
                                 {"average", required_argument, nullptr, 'a'},
                                 {"json", required_argument, nullptr, 'J'},
                                 {"output_file", required_argument, nullptr, 'J'},
                                 {"cold", no_argument, nullptr, 'C'},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "b:e:f:i:n:w:m:c:d:o:r:a:J:Ch", kLong, nullptr)) != -1) {
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
        ok = end != optarg && *end == '\0' && o->step_factor >= 1.0 && o->step_factor < 1e6;
        break;
      }
      case 'n':
        ok = parse_int(optarg, 1, 1000000000, &o->iters);
        break;
      case 'w':
        ok = parse_int(optarg, 0, 1000000000, &o->warmup);
        break;
      case 'm':
        ok = parse_int(optarg, 1, 1000000, &o->agg_iters);
        break;
      case 'c':
        ok = parse_int(optarg, 0, 1000000, &o->check);
        break;
      case 'a':
        ok = parse_int(optarg, 0, 3, &o->average);
        break;
      case 'r':
        if (std::strcmp(optarg, "all") == 0) {
          o->all_roots = true;
        } else {
          o->all_roots = false;
          ok = parse_int(optarg, 0, 65535, &o->root);
        }
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
      case 'J':
        o->json = optarg;
        ok = !o->json.empty();
        break;
      case 'C':
        o->cold = true;
        break;
      case 'h':
        usage(argv[0], stdout);
        return 2;
      default:
        usage(argv[0], stderr);
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
  const char* env = std::getenv("KF_PERF_MIN_BW");
  if (env && *env) {
    char* end = nullptr;
    errno = 0;
    o->min_bw = std::strtod(env, &end);
    if (errno != 0 || end == env || *end != '\0' || !(o->min_bw >= 0) ||
        !std::isfinite(o->min_bw)) {
      std::fprintf(stderr, "%s: KF_PERF_MIN_BW='%s' is not a bandwidth in GB/s\n", argv[0], env);
      return 1;
    }
  }
  return 0;
}

const char* time_format(double us) {
  return us >= 1e4 ? "%7.0f" : us >= 100 ? "%7.1f" : "%7.2f";
}

// One half of a result row.
struct Block {
  double time_us = 0;
  double algbw = 0;  // GB/s
  double busbw = 0;  // GB/s
  uint64_t wrong = 0;
  bool checked = false;
};

struct Row {
  size_t size;
  uint64_t count;
  kf_dtype_t dtype;
  const char* op;  // "none" when the collective takes no op
  int root;        // -1 when it takes no root
  Block block[2];  // out-of-place, in-place
};

// Runs one collective for every sweep size and prints rows; accumulates the
// busbw sum and the number of wrong elements. Returns false on a library error.
class Sweep {
 public:
  Sweep(const CollDesc& coll, const Options& o, kf_comm_t comm, int rank, int nranks)
      : coll_(coll), o_(o), comm_(comm), rank_(rank), nranks_(nranks) {}

  bool run(kf_dtype_t dtype, kf_op_t op, int root);
  uint64_t wrong_total() const { return wrong_total_; }
  double busbw_sum() const { return busbw_sum_; }
  int blocks() const { return blocks_; }
  const std::vector<Row>& rows() const { return rows_; }

 private:
  bool fail(const char* what, kf_status_t st) const {
    std::fprintf(stderr, "%s_perf: rank %d: %s failed: %s: %s\n", coll_.name, rank_, what,
                 kf_status_string(st), kf_comm_last_error(comm_));
    return false;
  }
  // Points *send and *recv into the region at base (recv region at
  // base + recv_off when out of place), following the in-place layout.
  void place(const RunParams& p, char* base, size_t recv_off, char** send, char** recv) const;
  // The buffers for the next operation: the same warm buffers every time, or
  // the next slice of the cold pool.
  void next_buffers(const RunParams& p, char** send, char** recv);
  bool combine_time(double local_us, double* out);
  bool one(RunParams& p, Block* b);

  const CollDesc& coll_;
  const Options& o_;
  kf_comm_t comm_;
  int rank_;
  int nranks_;
  Buffer warm_, expected_, pool_;
  size_t warm_recv_off_ = 0;  // out-of-place recvbuf offset in warm_
  size_t pool_cursor_ = 0;
  uint64_t wrong_total_ = 0;
  double busbw_sum_ = 0;
  int blocks_ = 0;
  std::vector<Row> rows_;
  uint32_t salt_ = 1;
};

void Sweep::place(const RunParams& p, char* base, size_t recv_off, char** send, char** recv) const {
  const Counts& c = p.counts;
  const size_t off = c.inplace_offset * kft::element_size(p.dtype);
  if (!p.inplace) {
    *send = base;
    *recv = base + recv_off;
  } else if (c.inplace_send_in_recv) {
    *recv = base;
    *send = base + off;
  } else {
    *send = base;
    *recv = base + off;
  }
}

void Sweep::next_buffers(const RunParams& p, char** send, char** recv) {
  if (!o_.cold) {
    place(p, warm_.bytes(), warm_recv_off_, send, recv);
    return;
  }
  const size_t esize = kft::element_size(p.dtype);
  const Counts& c = p.counts;
  const size_t sbytes = round_up(c.send * esize, kColdAlign);
  const size_t rbytes = round_up(c.recv * esize, kColdAlign);
  size_t need = p.inplace ? (sbytes > rbytes ? sbytes : rbytes) : sbytes + rbytes;
  if (need == 0) need = kColdAlign;
  if (pool_cursor_ + need > pool_.capacity()) pool_cursor_ = 0;
  place(p, pool_.bytes() + pool_cursor_, sbytes, send, recv);
  pool_cursor_ += need;
}

bool Sweep::combine_time(double local_us, double* out) {
  kf_status_t st = KF_SUCCESS;
  switch (o_.average) {
    case 0:
      st = kf_broadcast(comm_, &local_us, out, 1, KF_FLOAT64, 0);
      break;
    case 1:
      st = kf_all_reduce(comm_, &local_us, out, 1, KF_FLOAT64, KF_SUM);
      *out /= nranks_;
      break;
    case 2:
      st = kf_all_reduce(comm_, &local_us, out, 1, KF_FLOAT64, KF_MIN);
      break;
    default:
      st = kf_all_reduce(comm_, &local_us, out, 1, KF_FLOAT64, KF_MAX);
      break;
  }
  return st == KF_SUCCESS || fail("combining the times", st);
}

bool Sweep::one(RunParams& p, Block* b) {
  const Counts& c = p.counts;
  char* sendp = nullptr;
  char* recvp = nullptr;
  kf_status_t st;
  if (!o_.cold) {
    next_buffers(p, &sendp, &recvp);
    coll_.init_input(p, sendp);
  }
  for (int i = 0; i < o_.warmup; ++i) {
    next_buffers(p, &sendp, &recvp);
    if ((st = coll_.run(p, sendp, recvp)) != KF_SUCCESS) return fail(coll_.name, st);
  }
  if ((st = kf_barrier(comm_)) != KF_SUCCESS) return fail("kf_barrier", st);
  const double t0 = now_seconds();
  for (int i = 0; i < o_.iters; ++i) {
    for (int a = 0; a < o_.agg_iters; ++a) {
      next_buffers(p, &sendp, &recvp);
      if ((st = coll_.run(p, sendp, recvp)) != KF_SUCCESS) return fail(coll_.name, st);
    }
  }
  const double local_us =
      (now_seconds() - t0) * 1e6 / (static_cast<double>(o_.iters) * o_.agg_iters);
  if (!combine_time(local_us, &b->time_us)) return false;

  b->wrong = 0;
  b->checked = o_.check > 0 && (!p.inplace || coll_.check_inplace);
  if (!b->checked) return true;
  // Checks always use the warm buffers (the pool slices hold no input).
  place(p, warm_.bytes(), warm_recv_off_, &sendp, &recvp);
  const size_t esize = kft::element_size(p.dtype);
  for (int k = 0; k < o_.check; ++k) {
    p.salt = ++salt_;
    // Poison the output so a collective that writes nothing is caught.
    if (!p.inplace && c.recv) std::memset(recvp, 0xA5, c.recv * esize);
    coll_.init_input(p, sendp);
    if ((st = coll_.run(p, sendp, recvp)) != KF_SUCCESS) return fail(coll_.name, st);
    uint64_t local_wrong = 0, wrong = 0;
    if (coll_.fill_expected(p, expected_.get())) {
      uint64_t first_bad = 0;
      local_wrong = kft::count_wrong(recvp, expected_.get(), c.recv, p.dtype, p.op, &first_bad);
      if (local_wrong) {
        std::fprintf(stderr,
                     "%s_perf: rank %d: %s %s root %d count %" PRIu64 " %s: %" PRIu64
                     " wrong, first at %" PRIu64 ": expected %g got %g\n",
                     coll_.name, rank_, kft::dtype_name(p.dtype),
                     coll_.uses_op ? kft::op_name(p.op) : "none", coll_.uses_root ? p.root : -1,
                     c.param, p.inplace ? "in-place" : "out-of-place", local_wrong, first_bad,
                     kft::element_as_double(expected_.get(), first_bad, p.dtype),
                     kft::element_as_double(recvp, first_bad, p.dtype));
      }
    }
    if ((st = kf_all_reduce(comm_, &local_wrong, &wrong, 1, KF_UINT64, KF_SUM)) != KF_SUCCESS)
      return fail("kf_all_reduce(#wrong)", st);
    b->wrong += wrong;
  }
  return true;
}

bool Sweep::run(kf_dtype_t dtype, kf_op_t op, int root) {
  const size_t esize = kft::element_size(dtype);
  const Counts maxc = coll_.get_counts(o_.max_bytes, esize, nranks_, rank_);
  const size_t sbytes = maxc.send * esize, rbytes = maxc.recv * esize;
  // The warm buffers: one region; the in-place layout uses its start
  // (max(send, recv) elements), the out-of-place recvbuf follows that.
  warm_recv_off_ = round_up(sbytes > rbytes ? sbytes : rbytes, 64);
  bool ok = warm_.ensure(warm_recv_off_ + rbytes) && (!o_.check || expected_.ensure(rbytes));
  if (ok && o_.cold) {
    const size_t slice = round_up(sbytes, kColdAlign) + round_up(rbytes, kColdAlign);
    ok = pool_.ensure(2 * slice > kColdPoolBytes ? 2 * slice : kColdPoolBytes);
  }
  if (!ok) {
    std::fprintf(stderr, "%s_perf: rank %d: out of memory\n", coll_.name, rank_);
    return false;
  }
  for (size_t bytes = o_.min_bytes; bytes <= o_.max_bytes;) {
    RunParams p{
        comm_, rank_, nranks_, dtype, op, root, coll_.get_counts(bytes, esize, nranks_, rank_),
        0,     false};
    Row row{};
    row.size = (p.counts.send > p.counts.recv ? p.counts.send : p.counts.recv) * esize;
    row.count = p.counts.param;
    row.dtype = dtype;
    row.op = coll_.uses_op ? kft::op_name(op) : "none";
    row.root = coll_.uses_root ? root : -1;
    char line[256];
    int len = std::snprintf(line, sizeof line, "%12zu  %12" PRIu64 "  %8s  %6s  %6d", row.size,
                            row.count, kft::dtype_name(dtype), row.op, row.root);
    for (int inplace = 0; inplace < 2; ++inplace) {
      Block& b = row.block[inplace];
      p.inplace = inplace != 0;
      if (!one(p, &b)) return false;
      b.algbw = b.time_us > 0 ? static_cast<double>(row.size) / b.time_us / 1e3 : 0.0;  // GB/s
      b.busbw = b.algbw * coll_.bus_factor(nranks_);
      char t[32], w[32];
      std::snprintf(t, sizeof t, time_format(b.time_us), b.time_us);
      if (b.checked)
        std::snprintf(w, sizeof w, "%" PRIu64, b.wrong);
      else
        std::snprintf(w, sizeof w, "N/A");
      len += std::snprintf(line + len, sizeof line - static_cast<size_t>(len),
                           "  %7s  %6.2f  %6.2f  %6s", t, b.algbw, b.busbw, w);
      wrong_total_ += b.wrong;
      busbw_sum_ += b.busbw;
      ++blocks_;
    }
    rows_.push_back(row);
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

// Writes s as a JSON string.
void json_string(FILE* f, const char* s) {
  std::fputs(kf::json_quote(s).c_str(), f);
}

void json_number(FILE* f, double v) {
  if (std::isfinite(v))
    std::fprintf(f, "%.6g", v);
  else
    std::fputs("null", f);
}

void json_block(FILE* f, const Block& b) {
  std::fputs("{\"time_us\": ", f);
  json_number(f, b.time_us);
  std::fputs(", \"algbw_GBps\": ", f);
  json_number(f, b.algbw);
  std::fputs(", \"busbw_GBps\": ", f);
  json_number(f, b.busbw);
  if (b.checked)
    std::fprintf(f, ", \"wrong\": %" PRIu64 "}", b.wrong);
  else
    std::fputs(", \"wrong\": null}", f);
}

// Writes the JSON report (see perf/README.md). Returns false on an I/O error.
bool write_json(const std::string& path, const CollDesc& coll, const Options& o, int nranks,
                const std::vector<int>& roots, const Sweep& sweep, bool completed, double avg,
                bool gate_failed, bool passed) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return false;
  const int v = kf_get_version();
  std::fprintf(f, "{\n  \"tool\": \"%s_perf\",\n  \"collective\": \"%s\",\n", coll.name, coll.name);
  std::fprintf(f, "  \"library_version\": \"%d.%d.%d\",\n  \"nranks\": %d,\n", v / 10000,
               v / 100 % 100, v % 100, nranks);
  std::fprintf(f,
               "  \"config\": {\"min_bytes\": %zu, \"max_bytes\": %zu, \"step_factor\": %g, "
               "\"step_bytes\": %zu, \"iters\": %d, \"warmup_iters\": %d, \"agg_iters\": %d, "
               "\"check\": %d, \"average\": %d, \"cold\": %s, \"cold_pool_bytes\": %zu, "
               "\"bus_factor\": ",
               o.min_bytes, o.max_bytes, o.step_factor > 1.0 ? o.step_factor : 0.0,
               o.step_factor > 1.0 ? size_t{0} : o.step_bytes, o.iters, o.warmup, o.agg_iters,
               o.check, o.average, o.cold ? "true" : "false", o.cold ? kColdPoolBytes : size_t{0});
  json_number(f, coll.bus_factor(nranks));
  std::fputs(", \"dtypes\": [", f);
  for (size_t i = 0; i < o.dtypes.size(); ++i) {
    if (i) std::fputs(", ", f);
    json_string(f, kft::dtype_name(o.dtypes[i]));
  }
  std::fputs("], \"ops\": [", f);
  if (coll.uses_op) {
    for (size_t i = 0; i < o.ops.size(); ++i) {
      if (i) std::fputs(", ", f);
      json_string(f, kft::op_name(o.ops[i]));
    }
  }
  std::fputs("], \"roots\": [", f);
  if (coll.uses_root) {
    for (size_t i = 0; i < roots.size(); ++i) std::fprintf(f, "%s%d", i ? ", " : "", roots[i]);
  }
  std::fputs("], \"min_bw_GBps\": ", f);
  if (o.min_bw >= 0)
    json_number(f, o.min_bw);
  else
    std::fputs("null", f);
  std::fputs("},\n  \"results\": [", f);
  const std::vector<Row>& rows = sweep.rows();
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    std::fprintf(f, "%s\n    {\"size\": %zu, \"count\": %" PRIu64 ", \"type\": ", i ? "," : "",
                 r.size, r.count);
    json_string(f, kft::dtype_name(r.dtype));
    std::fputs(", \"redop\": ", f);
    json_string(f, r.op);
    std::fprintf(f, ", \"root\": %d,\n     \"out_of_place\": ", r.root);
    json_block(f, r.block[0]);
    std::fputs(",\n     \"in_place\": ", f);
    json_block(f, r.block[1]);
    std::fputs("}", f);
  }
  std::fprintf(f, "\n  ],\n  \"completed\": %s,\n  \"out_of_bounds\": %" PRIu64 ",\n",
               completed ? "true" : "false", sweep.wrong_total());
  std::fputs("  \"avg_busbw_GBps\": ", f);
  json_number(f, avg);
  std::fprintf(f, ",\n  \"min_bw_failed\": %s,\n  \"passed\": %s\n}\n",
               gate_failed ? "true" : "false", passed ? "true" : "false");
  const bool ok = std::ferror(f) == 0;
  return std::fclose(f) == 0 && ok;
}

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
  std::vector<int> roots;
  if (o.all_roots && coll.uses_root) {
    for (int r = 0; r < nranks; ++r) roots.push_back(r);
  } else {
    roots.push_back(o.all_roots ? 0 : o.root);
  }
  if (coll.uses_root && !o.all_roots && o.root >= nranks) {
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
        "#  minBytes %zu maxBytes %zu step: %g(%s) warmup iters: %d iters: %d agg iters: %d "
        "validation: %d\n",
        o.min_bytes, o.max_bytes,
        o.step_factor > 1.0 ? o.step_factor : static_cast<double>(o.step_bytes),
        o.step_factor > 1.0 ? "factor" : "bytes", o.warmup, o.iters, o.agg_iters, o.check);
    std::printf(
        "#  time: per operation, mean over iterations on each rank, then %s (-a %d);"
        " GB = 1e9 bytes; busbw = algbw * %g\n",
        kAverageNames[o.average], o.average, coll.bus_factor(nranks));
    if (o.cold)
      std::printf(
          "#  buffers: cold cache: fresh buffers for every operation, rotating through a %zu MiB"
          " pool per rank (checks use separate buffers)\n",
          kColdPoolBytes >> 20);
    else
      std::printf("#  buffers: warm: the same buffers for every operation\n");
    if (!coll.check_inplace)
      std::printf("#  in-place %s has no defined result: its #wrong column is N/A\n", coll.name);
    if (o.min_bw >= 0)
      std::printf("#  KF_PERF_MIN_BW: %g GB/s: fails if the average bus bandwidth < %g GB/s\n",
                  o.min_bw, 0.9 * o.min_bw);
    std::printf("#\n# Using devices\n");
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

  // Loop order as nccl-tests: types, then ops, then roots.
  Sweep sweep(coll, o, comm, rank, nranks);
  bool ok = true;
  for (kf_dtype_t t : o.dtypes) {
    for (kf_op_t op : o.ops) {
      for (int root : roots) {
        ok = sweep.run(t, op, root);
        if (!ok) break;
      }
      if (!ok || !coll.uses_op) break;
    }
    if (!ok) break;
  }
  const double avg = sweep.blocks() ? sweep.busbw_sum() / sweep.blocks() : 0.0;
  // Every rank computes the same average (the times are combined across
  // ranks), so every rank takes the same exit path.
  const bool gate_failed = ok && o.min_bw >= 0 && avg < 0.9 * o.min_bw;
  if (ok && rank == 0) {
    std::printf("# Out of bounds values : %" PRIu64 " %s\n", sweep.wrong_total(),
                sweep.wrong_total() ? "FAILED" : "OK");
    std::printf("# Avg bus bandwidth    : %g %s\n#\n", avg,
                o.min_bw < 0  ? ""
                : gate_failed ? "FAILED"
                              : "OK");
    if (gate_failed)
      std::printf(
          "# FAILED: KF_PERF_MIN_BW=%g: average bus bandwidth %g GB/s is below 0.9 x %g = %g "
          "GB/s\n",
          o.min_bw, avg, o.min_bw, 0.9 * o.min_bw);
    std::fflush(stdout);
  }
  if (gate_failed && rank == 0)
    std::fprintf(stderr,
                 "%s_perf: average bus bandwidth %g GB/s < 0.9 x KF_PERF_MIN_BW (%g GB/s)\n",
                 coll.name, avg, o.min_bw);
  const bool passed = ok && sweep.wrong_total() == 0 && !gate_failed;
  if (rank == 0 && !o.json.empty()) {
    if (!write_json(o.json, coll, o, nranks, roots, sweep, ok, avg, gate_failed, passed)) {
      std::fprintf(stderr, "%s_perf: cannot write JSON to %s: %s\n", coll.name, o.json.c_str(),
                   std::strerror(errno));
      ok = false;
    }
  }
  const kf_status_t dst = kf_comm_destroy(comm);
  if (dst != KF_SUCCESS) {
    std::fprintf(stderr, "%s_perf: rank %d: kf_comm_destroy failed: %s\n", coll.name, rank,
                 kf_status_string(dst));
    ok = false;
  }
  return ok && passed ? 0 : 1;
}

}  // namespace kfp
