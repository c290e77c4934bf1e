// A peer's start of a partition that comes after one this rank runs waits
// for it and runs next on the same thread (sched/async_engine.h, 3.), and
// never behind the partition of an operation with a completion callback.
// Uniform steps of all_reduce operations of several partitions each, every
// result checked exactly (integers):
//  1. without callbacks, steps until the ranks have deferred a start at
//     least once (at most --steps; the deferral depends on timing: the
//     rank that finishes a partition first starts the next on its credit);
//  2. with a callback on every operation, --check more steps, during which
//     no rank defers anything.
// Run it on the message path (KF_TRANSPORT=tcp, or KF_ASYNC_ARENA=0: the
// lane has its own scheduling), with a partition size below the operation
// size and a credit window of one partition.
// With --none (and a store of early messages, KF_UNEXPECTED_BYTES, too small
// for a waiting partition's frames), phase 1 runs --check steps and expects
// no deferral at all.
// Usage: mp_async_defer [--steps N] [--check M] [--ops K] [--count C] [--none]
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "api/handle.h"
#include "mp_common.h"

namespace {

int32_t value(int rank, int step, int op, size_t i) {
  return static_cast<int32_t>(
      (uint64_t(rank) * 7919 + uint64_t(step) * 131 + uint64_t(op) * 31 + i * 17) % 1000);
}

void on_done(kf_request_t, kf_status_t, void* user) {
  static_cast<std::atomic<int>*>(user)->fetch_add(1);
}

// Deferred starts of this rank so far, summed over the ranks (a blocking
// all_reduce: every rank gets the same figure).
uint64_t deferred_everywhere(kf_comm_t comm) {
  uint64_t d = comm->impl->async().deferred_starts();
  if (kf_all_reduce(comm, &d, &d, 1, KF_UINT64, KF_SUM) != KF_SUCCESS) {
    std::fprintf(stderr, "FAIL: blocking all_reduce of the counters: %s\n",
                 kf_comm_last_error(comm));
    std::exit(1);
  }
  return d;
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 2000, check = 200, ops = 8;
  size_t count = 4096;  // int32: 16 KiB an operation
  bool none = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--none")) none = true;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--steps")) steps = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--check")) check = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--ops")) ops = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--count")) count = static_cast<size_t>(std::atoll(argv[i + 1]));
  }
  int rank = 0, n = 1;
  kf_comm_t comm = kfmp::init_or_die("mp_async_defer", &rank, &n);
  std::vector<std::vector<int32_t>> send(static_cast<size_t>(ops)), recv(send.size());
  std::vector<kf_request_t> reqs(send.size());
  std::vector<std::atomic<int>> callbacks(send.size());
  long wrong = 0, failed = 0;

  // One step: every operation submitted, then all waited for; each result
  // checked. With `callback`, each must fire once.
  auto step = [&](int s, bool callback) {
    for (int k = 0; k < ops; ++k) {
      auto& in = send[static_cast<size_t>(k)];
      in.resize(count);
      for (size_t i = 0; i < count; ++i) in[i] = value(rank, s, k, i);
      recv[static_cast<size_t>(k)].assign(count, -1);
      callbacks[static_cast<size_t>(k)].store(0);
      kf_op_options_t o = KF_OP_OPTIONS_INITIALIZER;
      if (callback) {
        o.callback = on_done;
        o.user_data = &callbacks[static_cast<size_t>(k)];
      }
      const std::string name = "defer." + std::to_string(k);
      kf_status_t st =
          kf_iall_reduce(comm, name.c_str(), in.data(), recv[static_cast<size_t>(k)].data(), count,
                         KF_INT32, KF_SUM, &o, &reqs[static_cast<size_t>(k)]);
      if (st != KF_SUCCESS) {
        std::fprintf(stderr, "FAIL rank %d: submit %s: %s\n", rank, name.c_str(),
                     kf_status_string(st));
        std::exit(1);
      }
    }
    if (kf_request_wait_all(reqs.size(), reqs.data()) != KF_SUCCESS) ++failed;
    for (int k = 0; k < ops; ++k) {
      const auto& out = recv[static_cast<size_t>(k)];
      for (size_t i = 0; i < count; ++i) {
        int32_t want = 0;
        for (int r = 0; r < n; ++r) want += value(r, s, k, i);
        if (out[i] != want) ++wrong;
      }
      if (callbacks[static_cast<size_t>(k)].load() != (callback ? 1 : 0)) ++failed;
      kf_request_free(reqs[static_cast<size_t>(k)]);
    }
  };

  int s = 0;
  uint64_t deferred = 0;
  for (; s < (none ? check : steps) && (none || deferred == 0); ++s) {
    step(s, false);
    deferred = deferred_everywhere(comm);
  }
  bool ok = none ? deferred == 0 : deferred > 0;
  std::printf("%s rank %d: phase 1: %llu deferred starts after %d steps (%d operations each)%s\n",
              ok ? "PASS" : "FAIL", rank, static_cast<unsigned long long>(deferred), s, ops,
              none ? ", none expected" : "");
  for (int t = 0; t < check; ++t) step(s + t, true);
  const uint64_t after = deferred_everywhere(comm);
  std::printf(
      "%s rank %d: phase 2: %llu deferred starts behind operations with callbacks (%d "
      "steps)\n",
      after == deferred ? "PASS" : "FAIL", rank, static_cast<unsigned long long>(after - deferred),
      check);
  ok = ok && after == deferred;
  std::printf("%s rank %d: %ld wrong elements, %ld failed operations or callbacks\n",
              wrong == 0 && failed == 0 ? "PASS" : "FAIL", rank, wrong, failed);
  ok = ok && wrong == 0 && failed == 0;
  kf_comm_destroy(comm);
  return ok ? 0 : 1;
}
