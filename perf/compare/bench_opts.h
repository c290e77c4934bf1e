/*
 * Shared by the comparison benchmarks (C and C++): the all_reduce_perf flags
 * they accept (-b -e -f -i -n -w -c), the size sweep, the float32 test data
 * and the CSV output.
 *
 * Output, on rank 0 only, one line per size:
 *   impl,size_bytes,time_us,algbw,busbw,wrong
 * time_us is the mean over the timed iterations on each rank, maximum over
 * ranks (the all_reduce_perf convention); algbw = size / time in GB/s
 * (GB = 1e9 bytes); busbw = algbw * 2(n-1)/n. Lines starting with '#' are
 * comments.
 */
#ifndef KF_COMPARE_BENCH_OPTS_H
#define KF_COMPARE_BENCH_OPTS_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct {
  size_t min_bytes;
  size_t max_bytes;
  size_t step_bytes;
  double step_factor;
  int iters;
  int warmup;
  int check;
} bench_opts;

static inline void bench_opts_default(bench_opts* o) {
  o->min_bytes = (size_t)32 << 20;
  o->max_bytes = (size_t)32 << 20;
  o->step_bytes = (size_t)1 << 20;
  o->step_factor = 1.0;
  o->iters = 20;
  o->warmup = 5;
  o->check = 1;
}

static inline int bench_parse_size(const char* s, size_t* out) {
  char* end = NULL;
  unsigned long long v, mul = 1;
  errno = 0;
  v = strtoull(s, &end, 10);
  if (errno != 0 || end == s) return 0;
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
      return 0;
  }
  if (*end == 'B' || *end == 'b') ++end;
  if (*end != '\0') return 0;
  if (mul != 1 && v > (~0ull) / mul) return 0;
  *out = (size_t)(v * mul);
  return 1;
}

static inline int bench_parse_int(const char* s, int lo, int* out) {
  char* end = NULL;
  long v;
  errno = 0;
  v = strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < lo || v > 1000000000L) return 0;
  *out = (int)v;
  return 1;
}

/*
 * Parses the sweep flags. `extra` lists further getopt option letters the
 * caller handles in `on_extra` (which returns 0 for a bad value); NULL for
 * none. Returns 0 to run, 1 on a usage error (message printed), 2 after -h.
 */
static inline int bench_parse_args(int argc, char** argv, bench_opts* o, const char* extra,
                                   int (*on_extra)(int opt, const char* arg, void* ctx),
                                   void* ctx, const char* extra_usage) {
  char spec[64] = "b:e:f:i:n:w:c:h";
  int c;
  if (extra) strncat(spec, extra, sizeof spec - strlen(spec) - 1);
  bench_opts_default(o);
  while ((c = getopt(argc, argv, spec)) != -1) {
    int ok = 1;
    switch (c) {
      case 'b':
        ok = bench_parse_size(optarg, &o->min_bytes);
        break;
      case 'e':
        ok = bench_parse_size(optarg, &o->max_bytes);
        break;
      case 'i':
        ok = bench_parse_size(optarg, &o->step_bytes);
        break;
      case 'f': {
        char* end = NULL;
        o->step_factor = strtod(optarg, &end);
        ok = end != optarg && *end == '\0' && o->step_factor >= 1.0;
        break;
      }
      case 'n':
        ok = bench_parse_int(optarg, 1, &o->iters);
        break;
      case 'w':
        ok = bench_parse_int(optarg, 0, &o->warmup);
        break;
      case 'c':
        ok = bench_parse_int(optarg, 0, &o->check);
        break;
      case 'h':
      case '?':
        fprintf(stderr,
                "usage: %s [options]\n"
                "  -b minbytes   smallest size, with K/M/G suffix (default 32M)\n"
                "  -e maxbytes   largest size (default 32M)\n"
                "  -f factor     multiply the size by this factor each step\n"
                "  -i stepbytes  else add this many bytes each step (default 1M)\n"
                "  -n iters      timed iterations per size (default 20)\n"
                "  -w iters      warm-up iterations per size (default 5)\n"
                "  -c 0|1        check results (default 1)\n"
                "%s"
                "Always float32 sum, out of place. Prints CSV on rank 0:\n"
                "  impl,size_bytes,time_us,algbw,busbw,wrong\n",
                argv[0], extra_usage ? extra_usage : "");
        return c == 'h' ? 2 : 1;
      default:
        ok = on_extra ? on_extra(c, optarg, ctx) : 0;
        break;
    }
    if (!ok) {
      fprintf(stderr, "%s: bad value for -%c: '%s'\n", argv[0], c, optarg ? optarg : "");
      return 1;
    }
  }
  if (optind != argc) {
    fprintf(stderr, "%s: unexpected argument '%s'\n", argv[0], argv[optind]);
    return 1;
  }
  if (o->min_bytes > o->max_bytes) {
    fprintf(stderr, "%s: -b must not exceed -e\n", argv[0]);
    return 1;
  }
  if (o->step_factor <= 1.0 && o->step_bytes == 0) {
    fprintf(stderr, "%s: need -f > 1 or -i > 0\n", argv[0]);
    return 1;
  }
  return 0;
}

/* The next size of the sweep, or 0 when the sweep is over. */
static inline size_t bench_next_size(const bench_opts* o, size_t bytes) {
  size_t next = o->step_factor > 1.0 ? (size_t)((double)bytes * o->step_factor)
                                     : bytes + o->step_bytes;
  if (next <= bytes || next > o->max_bytes) return 0;
  return next;
}

static inline double bench_now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/*
 * Test data: small integers, so every partial sum is exact in float32 in any
 * order and the result can be compared for equality. Rank r, element i, salt s.
 */
static inline float bench_input(int rank, size_t i, uint32_t salt) {
  return (float)((i * 7u + (size_t)rank * 13u + salt * 5u) % 1021u);
}

static inline void bench_fill_input(float* x, size_t n, int rank, uint32_t salt) {
  size_t i;
  for (i = 0; i < n; ++i) x[i] = bench_input(rank, i, salt);
}

/* Number of elements of `got` that differ from the sum over `nranks` ranks. */
static inline uint64_t bench_count_wrong(const float* got, size_t n, int nranks, uint32_t salt) {
  uint64_t wrong = 0;
  size_t i;
  int r;
  for (i = 0; i < n; ++i) {
    float want = 0.0f;
    for (r = 0; r < nranks; ++r) want += bench_input(r, i, salt);
    if (got[i] != want) ++wrong;
  }
  return wrong;
}

static inline double bench_bus_factor(int nranks) {
  return nranks > 1 ? 2.0 * (nranks - 1) / nranks : 0.0;
}

static inline void bench_print_header(const char* impl, int nranks, const bench_opts* o) {
  printf("# %s allreduce float32 sum, out of place: nranks %d, minBytes %zu maxBytes %zu,"
         " step %g(%s), warmup %d, iters %d, validation %d\n",
         impl, nranks, o->min_bytes, o->max_bytes,
         o->step_factor > 1.0 ? o->step_factor : (double)o->step_bytes,
         o->step_factor > 1.0 ? "factor" : "bytes", o->warmup, o->iters, o->check);
  printf("# time: mean over iterations on each rank, max over ranks; GB = 1e9 bytes;"
         " busbw = algbw * %g\n",
         bench_bus_factor(nranks));
  printf("impl,size_bytes,time_us,algbw,busbw,wrong\n");
  fflush(stdout);
}

static inline void bench_print_row(const char* impl, int nranks, size_t bytes, double time_us,
                                   uint64_t wrong, int checked) {
  double algbw = time_us > 0 ? (double)bytes / time_us / 1e3 : 0.0;
  double busbw = algbw * bench_bus_factor(nranks);
  if (checked)
    printf("%s,%zu,%.3f,%.4f,%.4f,%llu\n", impl, bytes, time_us, algbw, busbw,
           (unsigned long long)wrong);
  else
    printf("%s,%zu,%.3f,%.4f,%.4f,N/A\n", impl, bytes, time_us, algbw, busbw);
  fflush(stdout);
}

#endif /* KF_COMPARE_BENCH_OPTS_H */
