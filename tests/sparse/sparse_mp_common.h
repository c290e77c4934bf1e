// Helpers shared by the multi-process sparse all_reduce tests, blocking
// (sparse_mp.cc) and async (sparse_async_mp.cc): failure counting, options,
// the data of the hierarchical cases, the check of a result against
// sparse_ref.h's expectation, and the final report. Public API only.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <vector>

#include "kungfu/kungfu.h"
#include "sparse_ref.h"

namespace sparse_mp {

// This rank and the job's size (main sets them), and the failed checks so far.
inline int g_rank = 0;
inline int g_size = 1;
inline int g_failures = 0;

}  // namespace sparse_mp

// Unless `cond` holds, prints where and the printf-style message after it,
// and counts a failure; the test goes on.
#define CHECK(cond, ...)                                                               \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      std::fprintf(stderr, "rank %d: %s:%d: ", sparse_mp::g_rank, __FILE__, __LINE__); \
      std::fprintf(stderr, __VA_ARGS__);                                               \
      std::fprintf(stderr, "\n");                                                      \
      ++sparse_mp::g_failures;                                                         \
    }                                                                                  \
  } while (0)

namespace sparse_mp {

inline kf_sparse_options_t options(kf_sparse_algorithm_t algo) {
  kf_sparse_options_t o = KF_SPARSE_OPTIONS_INITIALIZER;
  o.algorithm = algo;
  return o;
}

// Checks got[i] against want[i] * scale, within rel_tol of it (0: exactly);
// prints the first three wrong elements.
inline void compare(const char* what, const std::vector<float>& got,
                    const std::vector<double>& want, double scale, double rel_tol) {
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double e = want[i] * scale;
    if (std::fabs(got[i] - e) > std::fabs(e) * rel_tol) {
      if (bad++ < 3) CHECK(false, "%s: [%zu] = %g, want %g", what, i, double(got[i]), e);
    }
  }
  CHECK(bad == 0, "%s: %zu wrong elements", what, bad);
}

// The data of the hierarchical cases, on this job's layout.
struct HierCase {
  int hosts = 0;             // hosts of the job
  int host = 0;              // this rank's host
  int local = 0;             // this rank's index on its host
  int local_size = 0;        // ranks on every host
  size_t d = 4099, k = 64;   // count and k of every hierarchical case
  std::vector<float> x;      // this rank's gradient (sparse_ref::hier_gradient)
  std::vector<double> want;  // the SUM of the hierarchical algorithm
};

// Fills *c for this job; false, with a note on stdout, when the hosts hold
// different rank counts (the hierarchical cases are then skipped).
inline bool hier_case(kf_comm_t comm, HierCase* c) {
  kf_comm_host_count(comm, &c->hosts);
  kf_comm_host_index(comm, g_rank, &c->host);
  kf_comm_local_rank(comm, &c->local);
  kf_comm_local_size(comm, &c->local_size);
  if (c->hosts * c->local_size != g_size) {
    std::printf("rank %d: hosts hold different rank counts; hierarchical test skipped\n", g_rank);
    return false;
  }
  c->want = sparse_ref::hier_expected(c->d, c->k, c->hosts, c->local_size);
  c->x = sparse_ref::hier_gradient(c->d, c->host, c->local);
  return true;
}

// The end of main: the failure count, or "rank R: sparse_mp OK (np N)"
// followed by `suffix` (tests/sparse/cluster_sparse.sh counts these lines).
// Returns the exit code.
inline int report(const char* suffix) {
  if (g_failures != 0) {
    std::fprintf(stderr, "rank %d: %d failures\n", g_rank, g_failures);
    return 1;
  }
  std::printf("rank %d: sparse_mp OK (np %d)%s\n", g_rank, g_size, suffix);
  return 0;
}

}  // namespace sparse_mp
