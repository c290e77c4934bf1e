// gloo_allreduce_bench: Gloo's ring allreduce (gloo::allreduce with the RING
// algorithm, float32 sum, out of place) over Gloo's TCP transport on
// 127.0.0.1, timed like all_reduce_perf (same flags, sizes, busbw and time
// conventions) for the side-by-side comparison in compare.sh.
//
// Ranks are launched by kfrun: the rank and size come from KF_RANK and
// KF_SIZE (one rank without them). Rendezvous is a gloo FileStore in a
// directory shared by the ranks: -s DIR, else a directory under $TMPDIR (or
// /tmp) named after a hash of the job's KF_JOB_SECRET and KF_ROOT_ADDR, which
// rank 0 removes at the end.
#include <dirent.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "bench_opts.h"
#include "gloo/allreduce.h"
#include "gloo/barrier.h"
#include "gloo/config.h"
#include "gloo/math.h"
#include "gloo/rendezvous/context.h"
#include "gloo/rendezvous/file_store.h"
#include "gloo/rendezvous/prefix_store.h"
#include "gloo/transport/tcp/device.h"

namespace {

using ReduceFn = void (*)(void*, const void*, const void*, size_t);

struct Extra {
  std::string store_dir;
  int timeout_s = 120;
};

int on_extra(int opt, const char* arg, void* ctx) {
  auto* e = static_cast<Extra*>(ctx);
  if (opt == 's') {
    e->store_dir = arg;
    return !e->store_dir.empty();
  }
  if (opt == 't') return bench_parse_int(arg, 1, &e->timeout_s);
  return 0;
}

int env_int(const char* name, int dflt) {
  const char* v = std::getenv(name);
  int out = dflt;
  if (v && !bench_parse_int(v, 0, &out)) {
    std::fprintf(stderr, "gloo_allreduce_bench: bad %s='%s'\n", name, v);
    std::exit(2);
  }
  return out;
}

// FNV-1a, to name the store directory without putting the job secret in it.
uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

void remove_dir(const std::string& dir) {
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") std::remove((dir + "/" + name).c_str());
    }
    closedir(d);
  }
  rmdir(dir.c_str());
}

void barrier(const std::shared_ptr<gloo::Context>& ctx) {
  gloo::BarrierOptions opts(ctx);
  gloo::barrier(opts);
}

// One ring allreduce, options built per call as frameworks do (PyTorch's
// ProcessGroupGloo builds them per call too).
void allreduce(const std::shared_ptr<gloo::Context>& ctx, const float* send, float* recv,
               size_t count) {
  gloo::AllreduceOptions opts(ctx);
  opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
  opts.setInput(const_cast<float*>(send), count);
  opts.setOutput(recv, count);
  opts.setReduceFunction(static_cast<ReduceFn>(&gloo::sum<float>));
  gloo::allreduce(opts);
}

template <typename T>
T allreduce_scalar(const std::shared_ptr<gloo::Context>& ctx, T v, ReduceFn fn) {
  T out = v;
  gloo::AllreduceOptions opts(ctx);
  opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
  opts.setOutput(&out, 1);
  opts.setReduceFunction(fn);
  gloo::allreduce(opts);
  return out;
}

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

int run(int argc, char** argv) {
  bench_opts o;
  Extra extra;
  const int prc = bench_parse_args(argc, argv, &o, "s:t:", on_extra, &extra,
                                   "  -s dir        FileStore directory shared by the ranks\n"
                                   "  -t seconds    Gloo timeout (default 120)\n");
  if (prc != 0) return prc == 2 ? 0 : 2;

  const int rank = env_int("KF_RANK", 0);
  const int nranks = env_int("KF_SIZE", 1);
  if (nranks < 1 || rank >= nranks) {
    std::fprintf(stderr, "gloo_allreduce_bench: bad KF_RANK %d / KF_SIZE %d\n", rank, nranks);
    return 2;
  }
  bool own_dir = false;
  if (extra.store_dir.empty()) {
    const char* secret = std::getenv("KF_JOB_SECRET");
    const char* root = std::getenv("KF_ROOT_ADDR");
    if (nranks > 1 && !secret) {
      std::fprintf(stderr, "gloo_allreduce_bench: KF_SIZE > 1 without KF_JOB_SECRET: pass -s DIR\n");
      return 2;
    }
    const char* tmp = std::getenv("TMPDIR");
    char name[64];
    std::snprintf(name, sizeof name, "/kf-gloo-%016llx",
                  static_cast<unsigned long long>(
                      fnv1a(std::string(secret ? secret : "") + "|" + (root ? root : "") + "|" +
                            std::to_string(nranks == 1 ? static_cast<int>(getpid()) : 0))));
    extra.store_dir = std::string(tmp && *tmp ? tmp : "/tmp") + name;
    own_dir = true;
  }
  mkdir(extra.store_dir.c_str(), 0700);  // EEXIST is fine: another rank made it

  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";  // loopback only
  attr.ai_family = AF_INET;
  auto dev = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore file_store(extra.store_dir);
  gloo::rendezvous::PrefixStore store("allreduce", file_store);
  auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, nranks);
  ctx->setTimeout(std::chrono::seconds(extra.timeout_s));
  ctx->connectFullMesh(store, dev);
  std::shared_ptr<gloo::Context> base = ctx;

  const size_t max_count = o.max_bytes / sizeof(float);
  const size_t alloc_bytes = (max_count ? max_count : 1) * sizeof(float);
  void* sp = nullptr;
  void* rp = nullptr;
  if (posix_memalign(&sp, 64, alloc_bytes) != 0 || posix_memalign(&rp, 64, alloc_bytes) != 0) {
    std::fprintf(stderr, "gloo_allreduce_bench: rank %d: out of memory\n", rank);
    return 1;
  }
  std::unique_ptr<void, FreeDeleter> send_owner(sp), recv_owner(rp);
  auto* send = static_cast<float*>(sp);
  auto* recv = static_cast<float*>(rp);
  std::memset(send, 0, alloc_bytes);  // touch every page before timing
  std::memset(recv, 0, alloc_bytes);

  if (rank == 0) {
    std::printf("# gloo_allreduce_bench: Gloo %d.%d.%d, tcp transport on 127.0.0.1, ring\n",
                GLOO_VERSION_MAJOR, GLOO_VERSION_MINOR, GLOO_VERSION_PATCH);
    bench_print_header("gloo", nranks, &o);
  }

  uint32_t salt = 1;
  uint64_t wrong_total = 0;
  for (size_t bytes = o.min_bytes; bytes != 0; bytes = bench_next_size(&o, bytes)) {
    const size_t count = bytes / sizeof(float);
    bench_fill_input(send, count, rank, salt);
    // Gloo rejects zero-element buffers; a count of 0 is timed as nothing.
    const bool empty = count == 0;
    for (int i = 0; i < o.warmup && !empty; ++i) allreduce(base, send, recv, count);
    barrier(base);
    const double t0 = bench_now_seconds();
    for (int i = 0; i < o.iters && !empty; ++i) allreduce(base, send, recv, count);
    const double local_us = (bench_now_seconds() - t0) * 1e6 / o.iters;
    const double time_us =
        allreduce_scalar<double>(base, local_us, static_cast<ReduceFn>(&gloo::max<double>));

    uint64_t wrong = 0;
    if (o.check && !empty) {
      ++salt;
      bench_fill_input(send, count, rank, salt);
      std::memset(recv, 0xff, count * sizeof(float));
      allreduce(base, send, recv, count);
      const uint64_t local_wrong = bench_count_wrong(recv, count, nranks, salt);
      wrong = allreduce_scalar<uint64_t>(base, local_wrong,
                                         static_cast<ReduceFn>(&gloo::sum<uint64_t>));
      wrong_total += wrong;
    }
    if (rank == 0) bench_print_row("gloo", nranks, count * sizeof(float), time_us, wrong, o.check);
  }
  barrier(base);
  if (rank == 0) {
    std::printf("# Out of bounds values : %llu %s\n",
                static_cast<unsigned long long>(wrong_total), wrong_total ? "FAILED" : "OK");
    if (own_dir) remove_dir(extra.store_dir);
  }
  return wrong_total ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gloo_allreduce_bench: rank %s: %s\n",
                 std::getenv("KF_RANK") ? std::getenv("KF_RANK") : "0", e.what());
    return 1;
  }
}
