/*
 * memcpy_probe: single-thread memcpy bandwidth, the yardstick compare.sh holds
 * the allreduce bandwidths against.
 *
 * Copies -s bytes (default 64 MiB) -r times (default 10) and reports the best
 * time. Source and destination rotate through a pool of buffers whose total
 * size is at least 4x -l (default 64 MiB, twice this machine's 32 MiB LLC), so
 * no copy starts with its data in cache. Bandwidth is bytes copied / time
 * (GB = 1e9 bytes), as memcpy benchmarks usually count it (the memory traffic
 * is twice that, or three times with write-allocate).
 *
 * Output (CSV, after '#' comments):
 *   impl,size_bytes,time_us,gbps
 *   memcpy,67108864,<best us>,<GB/s>
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int parse_size(const char* s, size_t* out) {
  char* end = NULL;
  unsigned long long v, mul = 1;
  errno = 0;
  v = strtoull(s, &end, 10);
  if (errno != 0 || end == s) return 0;
  if (*end == 'k' || *end == 'K') mul = 1ull << 10, ++end;
  else if (*end == 'm' || *end == 'M') mul = 1ull << 20, ++end;
  else if (*end == 'g' || *end == 'G') mul = 1ull << 30, ++end;
  if (*end == 'B' || *end == 'b') ++end;
  if (*end != '\0' || v == 0 || v > (~0ull) / mul) return 0;
  *out = (size_t)(v * mul);
  return 1;
}

int main(int argc, char** argv) {
  size_t size = (size_t)64 << 20, llc = (size_t)64 << 20, nbuf, i;
  int reps = 10, c, r;
  char** bufs;
  double best = 1e30;
  volatile unsigned char sink = 0;

  while ((c = getopt(argc, argv, "s:r:l:h")) != -1) {
    int ok = 1;
    switch (c) {
      case 's':
        ok = parse_size(optarg, &size);
        break;
      case 'l':
        ok = parse_size(optarg, &llc);
        break;
      case 'r':
        reps = atoi(optarg);
        ok = reps >= 1 && reps <= 100000;
        break;
      default:
        fprintf(stderr,
                "usage: %s [-s bytes (64M)] [-r reps (10)] [-l cache bytes to defeat (64M)]\n",
                argv[0]);
        return c == 'h' ? 0 : 2;
    }
    if (!ok) {
      fprintf(stderr, "%s: bad value for -%c: '%s'\n", argv[0], c, optarg);
      return 2;
    }
  }
  if (optind != argc) {
    fprintf(stderr, "%s: unexpected argument '%s'\n", argv[0], argv[optind]);
    return 2;
  }

  /* At least 3 buffers (a copy never reuses the previous destination as its
   * source), and enough that the whole pool is >= 4x the cache to defeat. */
  nbuf = (4 * llc + size - 1) / size;
  if (nbuf < 3) nbuf = 3;
  if (nbuf > 64) nbuf = 64;
  bufs = calloc(nbuf, sizeof *bufs);
  if (!bufs) return 1;
  for (i = 0; i < nbuf; ++i) {
    if (posix_memalign((void**)&bufs[i], 64, size) != 0) {
      fprintf(stderr, "memcpy_probe: out of memory (%zu x %zu bytes)\n", nbuf, size);
      return 1;
    }
    memset(bufs[i], (int)(i + 1), size); /* touch every page */
  }

  for (r = 0; r < reps; ++r) {
    /* Rotate: source i, destination i+1; both were last touched nbuf-1 and
     * nbuf-2 copies ago. */
    char* src = bufs[(size_t)r % nbuf];
    char* dst = bufs[((size_t)r + 1) % nbuf];
    double t0 = now_seconds(), dt;
    memcpy(dst, src, size);
    dt = now_seconds() - t0;
    sink ^= (unsigned char)dst[size / 2];
    if (dt < best) best = dt;
  }
  (void)sink;

  printf("# memcpy_probe: single thread, %zu bytes, best of %d, %zu rotating buffers (%zu MiB)\n",
         size, reps, nbuf, nbuf * size >> 20);
  printf("impl,size_bytes,time_us,gbps\n");
  printf("memcpy,%zu,%.3f,%.4f\n", size, best * 1e6, (double)size / best / 1e9);
  for (i = 0; i < nbuf; ++i) free(bufs[i]);
  free(bufs);
  return 0;
}
