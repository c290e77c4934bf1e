// async_overhead: the cost of the asynchronous engine against blocking calls
// of the same sizes (run under kfrun, np >= 2). Blocking and asynchronous
// batches alternate after two untimed pairs of batches (warm-up); each time
// is the median over batches (the 90th percentile beside it), and each
// ratio the median over pairs of batches of async / blocking ("paired"), so
// that a burst of other load, which hits a pair alike, cancels out; the two
// sides take turns at going first.
//  - latency: one 8-byte all_reduce, blocking vs kf_iall_reduce +
//    kf_request_wait, and again with kf_request_wait_any;
//  - burst: -m all_reduces of 8 bytes (one per tensor, e.g. biases and norm
//    parameters), blocking one after another vs all submitted then waited
//    for together (fused: sched/fusion.h);
//  - throughput at equal priority: a "step" of -k all_reduces of -b bytes,
//    blocking one after another vs all submitted then waited for; once in
//    batches of 2 steps (each batch starts at a barrier, so the ranks start
//    its first step in step with each other), and once in batches of -s
//    steps back to back ("steady": what a training loop sees, where one
//    rank's next step starts while its peers finish the last one).
//    With a list of sizes (-b 262144,1048576,4194304) the two step
//    figures are measured at each size in turn, in one run. Each step line
//    also gives the difference per operation in us (paired ratio x
//    blocking time / k): a cost that does not grow with the size shows as
//    the same figure at every size. Below it: how long the step's k
//    submissions and k kf_request_free calls took (medians over the
//    asynchronous steps of the size, rank 0), the part of the difference
//    spent outside kf_request_wait_all.
// Usage: async_overhead [-n batches] [-m burst ops] [-k ops per step]
//                       [-b bytes per op[,bytes...]] [-s steps per steady batch]
//                       [-p async|blocking]
// (the step runs 4n batches of 2 steps, the steady step n batches of -s:
// a step is short and its ratio the smallest effect measured).
// -p: for profilers, only n steps of k operations of the first -b size,
// asynchronous or blocking, inside one function each
// (kf_perf_async_steps, kf_perf_blocking_steps: callgrind's
// --toggle-collect takes their names), after 5 steps outside them; no
// figures. (Callgrind collects only on the thread inside the function: the
// transport and lane threads' work is not counted.)
// Instructions per operation and the atomic instructions among them, e.g.
//   kfrun -np 2 -x KF_TRANSPORT=shm valgrind --tool=callgrind --dump-instr=yes
//     --toggle-collect=kf_perf_async_steps async_overhead -p async -n 200 -b 4096
//   perf/tools/callgrind_atomics.py callgrind.out.<pid> 3200
// (one command line; 3200 = n x k operations.)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "kungfu/kungfu.h"

namespace {

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void check(kf_status_t st, const char* what) {
  if (st != KF_SUCCESS) {
    std::fprintf(stderr, "async_overhead: %s failed: %s\n", what, kf_status_string(st));
    std::exit(1);
  }
}

// The q-quantile (0.5: the median) of the per-batch times.
double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

// Runs `blocking` and `async` (each one unit of work) in alternating
// batches of `reps` units, after two untimed pairs of batches; returns the
// median and 90th-percentile time per unit of each, in us, and the median
// ratio async / blocking over the pairs, each the maximum over ranks (every
// rank agrees on the figures).
struct Pair {
  double blocking, async;          // medians
  double blocking_p90, async_p90;  // 90th percentiles
  double ratio;                    // median of async / blocking per pair
};
Pair alternate(kf_comm_t comm, int batches, int reps, const std::function<void()>& blocking,
               const std::function<void()>& async) {
  std::vector<double> b, a;
  auto batch = [&](const std::function<void()>& unit, std::vector<double>* times) {
    check(kf_barrier(comm), "barrier");
    const double t0 = now_us();
    for (int r = 0; r < reps; ++r) unit();
    times->push_back((now_us() - t0) / reps);
  };
  for (int i = -2; i < batches; ++i) {
    // Each side goes first in every other pair: what one half leaves
    // behind (a thread still waking, a cold cache) falls on both alike.
    if (i % 2 == 0) {
      batch(blocking, &b);
      batch(async, &a);
    } else {
      batch(async, &a);
      batch(blocking, &b);
    }
    if (i < 0) {  // warm-up
      b.clear();
      a.clear();
    }
  }
  std::vector<double> r;
  for (size_t i = 0; i < b.size(); ++i) r.push_back(a[i] / b[i]);
  double m[5] = {quantile(b, 0.5), quantile(a, 0.5), quantile(b, 0.9), quantile(a, 0.9),
                 quantile(r, 0.5)};
  check(kf_all_reduce(comm, m, m, 5, KF_FLOAT64, KF_MAX), "max");
  return Pair{m[0], m[1], m[2], m[3], m[4]};
}

}  // namespace

namespace {

// The -p loops; the profiled calls go through the named functions below.
inline void async_steps(kf_comm_t comm, int steps, std::vector<std::vector<float>>* bufs,
                        const std::vector<std::string>& names, std::vector<kf_request_t>* reqs) {
  for (int s = 0; s < steps; ++s) {
    for (size_t j = 0; j < bufs->size(); ++j) {
      std::vector<float>& b = (*bufs)[j];
      check(kf_iall_reduce(comm, names[j].c_str(), b.data(), b.data(), b.size(), KF_FLOAT32, KF_SUM,
                           nullptr, &(*reqs)[j]),
            "istep");
    }
    check(kf_request_wait_all(reqs->size(), reqs->data()), "wait_all");
    for (kf_request_t r : *reqs) check(kf_request_free(r), "free");
  }
}

inline void blocking_steps(kf_comm_t comm, int steps, std::vector<std::vector<float>>* bufs) {
  for (int s = 0; s < steps; ++s) {
    for (std::vector<float>& b : *bufs) {
      check(kf_all_reduce(comm, b.data(), b.data(), b.size(), KF_FLOAT32, KF_SUM), "step");
    }
  }
}

}  // namespace

// The profiled -p loops (extern "C", not inlined: profilers find them by
// name; the warm-up steps run outside them).
extern "C" __attribute__((noinline)) void kf_perf_async_steps(kf_comm_t comm, int steps,
                                                              std::vector<std::vector<float>>* bufs,
                                                              const std::vector<std::string>& names,
                                                              std::vector<kf_request_t>* reqs) {
  async_steps(comm, steps, bufs, names, reqs);
}

extern "C" __attribute__((noinline)) void kf_perf_blocking_steps(
    kf_comm_t comm, int steps, std::vector<std::vector<float>>* bufs) {
  blocking_steps(comm, steps, bufs);
}

namespace {

int profile(kf_comm_t comm, bool async, int steps, int k, size_t bytes) {
  std::vector<std::vector<float>> bufs(static_cast<size_t>(k), std::vector<float>(bytes / 4, 1.0f));
  std::vector<std::string> names;
  for (int j = 0; j < k; ++j) names.push_back("g" + std::to_string(j));
  std::vector<kf_request_t> reqs(static_cast<size_t>(k));
  if (async) {
    async_steps(comm, 5, &bufs, names, &reqs);  // warm-up, outside the named function
    kf_perf_async_steps(comm, steps, &bufs, names, &reqs);
  } else {
    blocking_steps(comm, 5, &bufs);
    kf_perf_blocking_steps(comm, steps, &bufs);
  }
  check(kf_barrier(comm), "barrier");
  kf_comm_destroy(comm);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int batches = 15, burst = 64, k = 16, steady = 8;
  std::vector<size_t> sizes{1 << 20};
  const char* profiled = nullptr;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "-p")) {
      profiled = argv[i + 1];
      if (std::strcmp(profiled, "async") != 0 && std::strcmp(profiled, "blocking") != 0) {
        std::fprintf(stderr, "async_overhead: -p takes async or blocking\n");
        return 2;
      }
    }
    if (!std::strcmp(argv[i], "-n")) batches = std::max(1, std::atoi(argv[i + 1]));
    if (!std::strcmp(argv[i], "-m")) burst = std::max(1, std::atoi(argv[i + 1]));
    if (!std::strcmp(argv[i], "-k")) k = std::max(1, std::atoi(argv[i + 1]));
    if (!std::strcmp(argv[i], "-s")) steady = std::max(1, std::atoi(argv[i + 1]));
    if (!std::strcmp(argv[i], "-b")) {
      sizes.clear();
      for (const char* p = argv[i + 1]; *p != '\0';) {
        char* end = nullptr;
        const size_t b = std::strtoull(p, &end, 10);
        if (end == p || b < 4 || (*end != ',' && *end != '\0')) {
          std::fprintf(stderr,
                       "async_overhead: -b takes sizes of at least 4 bytes, comma-separated\n");
          return 2;
        }
        sizes.push_back(b);
        p = *end == ',' ? end + 1 : end;
      }
    }
  }
  kf_comm_t comm = nullptr;
  check(kf_comm_init_from_env(nullptr, &comm), "init");
  if (profiled != nullptr) {
    return profile(comm, !std::strcmp(profiled, "async"), batches, k, sizes.front());
  }
  int rank = 0;
  kf_comm_rank(comm, &rank);

  // Latency, 8 bytes.
  double x = 1, y = 0;
  auto blocking_8b = [&] {
    check(kf_all_reduce(comm, &x, &y, 1, KF_FLOAT64, KF_SUM), "all_reduce");
  };
  Pair lat = alternate(comm, batches, 400, blocking_8b, [&] {
    kf_request_t r;
    check(kf_iall_reduce(comm, "lat", &x, &y, 1, KF_FLOAT64, KF_SUM, nullptr, &r), "iall_reduce");
    check(kf_request_wait(r), "wait");
    kf_request_free(r);
  });

  // The same, waited for with kf_request_wait_any (a process-wide
  // completion signal instead of the request's own condition).
  Pair any = alternate(comm, batches, 400, blocking_8b, [&] {
    kf_request_t r;
    size_t index = 0;
    check(kf_iall_reduce(comm, "any", &x, &y, 1, KF_FLOAT64, KF_SUM, nullptr, &r), "iall_reduce");
    check(kf_request_wait_any(1, &r, &index), "wait_any");
    kf_request_free(r);
  });

  // A burst of small tensors.
  std::vector<double> in(static_cast<size_t>(burst), 1.0), out(in.size());
  std::vector<std::string> names;
  for (int j = 0; j < burst; ++j) names.push_back("b" + std::to_string(j));
  std::vector<kf_request_t> breqs(in.size());
  Pair bst = alternate(
      comm, batches, 20,
      [&] {
        for (int j = 0; j < burst; ++j)
          check(kf_all_reduce(comm, &in[j], &out[j], 1, KF_FLOAT64, KF_SUM), "burst");
      },
      [&] {
        for (int j = 0; j < burst; ++j) {
          check(kf_iall_reduce(comm, names[j].c_str(), &in[j], &out[j], 1, KF_FLOAT64, KF_SUM,
                               nullptr, &breqs[j]),
                "iburst");
        }
        check(kf_request_wait_all(breqs.size(), breqs.data()), "wait_all");
        for (auto r : breqs) kf_request_free(r);
      });

  // Throughput of a step of k equal-priority operations, at each size.
  struct Steps {
    size_t bytes;
    Pair step, steady;
    double submit_us, free_us;  // medians per asynchronous step, this rank
  };
  std::vector<Steps> steps;
  std::vector<kf_request_t> reqs(static_cast<size_t>(k));
  std::vector<std::string> gnames;
  for (int j = 0; j < k; ++j) gnames.push_back("g" + std::to_string(j));
  // Every size's buffers are allocated before the first is measured and
  // kept to the end: freeing a size's buffers would raise glibc's mmap
  // threshold and so change where the library's own temporary buffers come
  // from (and their page faults) for the sizes measured after it.
  std::vector<std::vector<std::vector<float>>> buffers;
  for (size_t bytes : sizes) {
    buffers.emplace_back(static_cast<size_t>(k), std::vector<float>(bytes / 4, 1.0f));
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    const size_t count = sizes[i] / 4;
    std::vector<std::vector<float>>& bufs = buffers[i];
    auto blocking_step = [&] {
      for (auto& b : bufs)
        check(kf_all_reduce(comm, b.data(), b.data(), count, KF_FLOAT32, KF_SUM), "step");
    };
    std::vector<double> submit_us, free_us;
    auto async_step = [&] {
      const double t0 = now_us();
      for (int j = 0; j < k; ++j) {
        check(kf_iall_reduce(comm, gnames[j].c_str(), bufs[j].data(), bufs[j].data(), count,
                             KF_FLOAT32, KF_SUM, nullptr, &reqs[static_cast<size_t>(j)]),
              "istep");
      }
      const double t1 = now_us();
      check(kf_request_wait_all(reqs.size(), reqs.data()), "wait_all");
      const double t2 = now_us();
      for (auto r : reqs) kf_request_free(r);
      submit_us.push_back(t1 - t0);
      free_us.push_back(now_us() - t2);
    };
    Pair step = alternate(comm, 4 * batches, 2, blocking_step, async_step);
    Pair steady_step = alternate(comm, batches, steady, blocking_step, async_step);
    steps.push_back(
        {count * 4, step, steady_step, quantile(submit_us, 0.5), quantile(free_us, 0.5)});
  }

  if (rank == 0) {
    std::printf(
        "8 B all_reduce latency: blocking %.2f us, async %.2f us (x%.2f paired); p90 %.2f / %.2f "
        "us\n",
        lat.blocking, lat.async, lat.ratio, lat.blocking_p90, lat.async_p90);
    std::printf("8 B all_reduce, wait_any: blocking %.2f us, async %.2f us (x%.2f paired)\n",
                any.blocking, any.async, any.ratio);
    std::printf(
        "burst of %d x 8 B all_reduce: blocking %.1f us, async %.1f us (x%.2f paired); p90 %.1f / "
        "%.1f us\n",
        burst, bst.blocking, bst.async, bst.ratio, bst.blocking_p90, bst.async_p90);
    // The difference per operation, from the paired ratio.
    auto per_op = [&](const Pair& p) { return (p.ratio - 1.0) * p.blocking / k; };
    for (const Steps& st : steps) {
      std::printf(
          "step of %d x %zu B all_reduce: blocking %.0f us, async %.0f us (%+.1f%% paired, "
          "%+.2f us per operation); p90 %.0f / %.0f us\n",
          k, st.bytes, st.step.blocking, st.step.async, 100.0 * (st.step.ratio - 1.0),
          per_op(st.step), st.step.blocking_p90, st.step.async_p90);
      std::printf(
          "steady step (%d back to back): blocking %.0f us, async %.0f us (%+.1f%% paired, "
          "%+.2f us per operation); p90 %.0f / %.0f us\n",
          steady, st.steady.blocking, st.steady.async, 100.0 * (st.steady.ratio - 1.0),
          per_op(st.steady), st.steady.blocking_p90, st.steady.async_p90);
      std::printf("  of an asynchronous step: %d submissions %.1f us, %d frees %.1f us (medians)\n",
                  k, st.submit_us, k, st.free_us);
    }
  }
  kf_comm_destroy(comm);
  return 0;
}
