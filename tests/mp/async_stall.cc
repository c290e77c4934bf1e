// Stall inspector: the last rank never submits 'ghost' (64 bytes) nor
// 'ghost_big' (4 KiB: on the shared-memory lane the first's data travels in
// its records, the second counts them in the operation itself). The others
// must log a warning naming each and the missing rank after
// KF_STALL_WARN_MS, and complete both with KF_ERR_TIMEOUT at KF_TIMEOUT_MS
// saying which rank never submitted them (the callback of 'ghost' once).
// Other operations keep working afterwards.
// Run with KF_STALL_WARN_MS=500 KF_TIMEOUT_MS=4000.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "mp_common.h"

namespace {

std::atomic<int> g_callbacks{0};
std::atomic<int> g_callback_status{-1};
void on_done(kf_request_t, kf_status_t st, void*) {
  g_callbacks.fetch_add(1);
  g_callback_status.store(st);
}

std::string slurp(const char* path) {
  std::string out;
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) out.append(buf, n);
  std::fclose(f);
  return out;
}

}  // namespace

int main() {
  // The library logs to stderr: capture it to check the warnings.
  char path[] = "/tmp/kf_async_stall_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0 || dup2(fd, 2) < 0) {
    std::printf("FAIL: cannot capture stderr\n");
    return 1;
  }
  int rank = 0, n = 1;
  kf_comm_t comm = kfmp::init_or_die("mp_async_stall", &rank, &n);
  const int absent = n - 1;
  int fails = 0;
  auto report = [&](bool ok, const std::string& what) {
    std::printf("%s rank %d: %s\n", ok ? "PASS" : "FAIL", rank, what.c_str());
    if (!ok) ++fails;
  };

  // Everyone first runs one operation (so every rank's engine is up).
  int32_t one = 1, sum = 0;
  kf_request_t r = nullptr;
  kf_status_t st = kf_iall_reduce(comm, "present", &one, &sum, 1, KF_INT32, KF_SUM, nullptr, &r);
  st = st == KF_SUCCESS ? kf_request_wait(r) : st;
  report(st == KF_SUCCESS && sum == n, "'present' completes");
  kf_request_free(r);

  const std::string missing = "rank(s) " + std::to_string(absent);
  if (rank != absent) {
    std::vector<int32_t> v(16, rank), out(16, 0);
    std::vector<int32_t> big(1024, rank), big_out(1024, 0);
    kf_op_options_t o = KF_OP_OPTIONS_INITIALIZER;
    o.callback = on_done;
    auto t0 = std::chrono::steady_clock::now();
    kf_request_t rb = nullptr;
    kf_status_t stb =
        kf_iall_reduce(comm, "ghost_big", big.data(), big_out.data(), 1024, KF_INT32, KF_SUM,
                       nullptr, &rb);
    st = kf_iall_reduce(comm, "ghost", v.data(), out.data(), 16, KF_INT32, KF_SUM, &o, &r);
    st = st == KF_SUCCESS ? kf_request_wait(r) : st;
    stb = stb == KF_SUCCESS ? kf_request_wait(rb) : stb;
    const std::string text_big = stb == KF_SUCCESS || rb == nullptr ? "" : kf_request_error(rb);
    report(stb == KF_ERR_TIMEOUT && text_big.find("'ghost_big'") != std::string::npos &&
               text_big.find(missing + " never submitted it") != std::string::npos,
           std::string("'ghost_big' -> ") + kf_status_string(stb) + ": " + text_big);
    kf_request_free(rb);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::string text = kf_request_error(r);
    report(st == KF_ERR_TIMEOUT && text.find("'ghost'") != std::string::npos &&
               text.find(missing + " never submitted it") != std::string::npos,
           std::string("'ghost' -> ") + kf_status_string(st) + " after " + std::to_string(s) +
               " s: " + text);
    report(g_callbacks.load() == 1 && g_callback_status.load() == KF_ERR_TIMEOUT,
           "callback fired " + std::to_string(g_callbacks.load()) + " time(s) with the timeout");
    kf_request_free(r);
  } else {
    std::this_thread::sleep_for(std::chrono::milliseconds(5000));
  }
  std::fflush(stderr);
  std::string log = slurp(path);
  if (rank != absent) {
    for (const char* name : {"ghost", "ghost_big"}) {
      // One line names the operation, this rank and the missing one.
      const std::string head =
          "'" + std::string(name) + "' #0 was submitted on rank " + std::to_string(rank);
      bool found = false;
      for (size_t at = log.find(head); at != std::string::npos && !found;
           at = log.find(head, at + 1)) {
        const std::string line = log.substr(at, log.find('\n', at) - at);
        found = line.find("not yet on " + missing) != std::string::npos;
      }
      report(found, std::string("stall warning names '") + name + "' and " + missing);
    }
  } else {
    // Informational: over shared memory (no progress thread) a rank with
    // nothing pending reads its peers' frames only when it next waits, so
    // it may not have seen the others' signature frames yet.
    std::printf("INFO rank %d: the absent rank %s the operation it has not submitted\n", rank,
                log.find("has not submitted it") != std::string::npos ? "logged" : "did not log");
  }
  std::printf("---- rank %d log:\n%s----\n", rank, log.c_str());

  // The communicator still works.
  st = kf_iall_reduce(comm, "after", &one, &sum, 1, KF_INT32, KF_SUM, nullptr, &r);
  st = st == KF_SUCCESS ? kf_request_wait(r) : st;
  report(st == KF_SUCCESS && sum == n, std::string("'after' -> ") + kf_status_string(st));
  kf_request_free(r);
  kf_comm_destroy(comm);
  unlink(path);
  return fails == 0 ? 0 : 1;
}
