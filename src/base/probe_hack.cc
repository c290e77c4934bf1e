#include "base/probe_hack.h"

#include <cstdio>
#include <cstdlib>
namespace kf {
namespace {
thread_local unsigned long g_last;
unsigned long g_sum[32];
unsigned long g_n[32];
struct Dump {
  ~Dump() {
    if (!getenv("KF_PROBE")) return;
    for (int i = 1; i < 32; ++i)
      if (g_n[i])
        fprintf(stderr, "probe %d: %lu cycles avg (n=%lu)\n", i, g_sum[i] / g_n[i], g_n[i]);
  }
} g_dump;
}  // namespace
thread_local bool g_gap = false;
void probe(int i) {
  unsigned long t = __rdtsc();
  if (i > 2 && !g_gap) return;
  if (i > 0 && g_last && t - g_last < 130000) {
    g_sum[i] += t - g_last;
    g_n[i]++;
  }
  g_last = t;
  if (i == 2) g_gap = true;
  if (i == 1) g_gap = false;
}
}  // namespace kf
