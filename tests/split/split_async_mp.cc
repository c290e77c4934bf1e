// The async API on split communicators, concurrently with the parent
// (issue 5): every rank splits the world by parity and by halves, then three
// threads submit named async operations (all_reduce, broadcast, all_gather,
// reduce_scatter, barrier) with mixed priorities and partition sizes on the
// parent and on both children at the same time, and wait for them in a
// different order than they were submitted. Results are checked exactly
// (int64 values that depend on the communicator, operation and rank).
// Then kf_request_wait_any over requests of two communicators: rank 0 waits
// for an all_reduce on the world that the other ranks submit only 300 ms
// later, and one on its half that they submit at once: the half's must be
// the one returned, with its result, and the world's complete after it.
//
// Usage: split_async_mp [--ops N]   (prints "[r] split_async_mp: all checks
// passed" on success, "[r] FAIL ..." lines and exit 1 otherwise).
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "mp_common.h"

namespace {

int g_rank = -1;
std::atomic<int> g_failed{0};

#define CHECK(cond, ...)                                                     \
  do {                                                                       \
    if (!(cond)) {                                                           \
      std::fprintf(stderr, "[%d] FAIL %s:%d: ", g_rank, __FILE__, __LINE__); \
      std::fprintf(stderr, __VA_ARGS__);                                     \
      std::fprintf(stderr, "\n");                                            \
      g_failed.fetch_add(1);                                                 \
    }                                                                        \
  } while (0)

enum Kind { kAllReduce, kBroadcast, kAllGather, kReduceScatter, kBarrier, kKinds };

// Element j of op `id` on communicator `salt` at (communicator) rank r.
int64_t value(int salt, int id, int r, uint64_t j) {
  return static_cast<int64_t>(
             (uint64_t(salt) * 1000003 + uint64_t(id) * 131 + uint64_t(r) * 7919 + j * 17) %
             100000) -
         50000;
}

struct Op {
  int id = 0;
  Kind kind = kAllReduce;
  uint64_t count = 0;
  int root = 0;
  std::vector<int64_t> send, recv;
  kf_request_t req = nullptr;
};

// Submits `nops` operations on `c` (rank r of n), then waits for them in
// reverse order and checks each result exactly.
void run_comm(kf_comm_t c, int salt, int nops) {
  int r = -1, n = -1;
  kf_comm_rank(c, &r);
  kf_comm_size(c, &n);
  std::vector<Op> ops(static_cast<size_t>(nops));
  for (int i = 0; i < nops; ++i) {
    Op& o = ops[static_cast<size_t>(i)];
    o.id = i;
    o.kind = static_cast<Kind>(i % kKinds);
    // The same on every member: a function of salt and i only.
    o.count = 1 + (uint64_t(i) * 2654435761u + uint64_t(salt)) % 6000;
    o.root = i % n;
    const uint64_t all = o.count * uint64_t(n);
    const uint64_t send_n = o.kind == kReduceScatter ? all : o.count;
    const uint64_t recv_n = o.kind == kAllGather ? all : o.count;
    o.send.resize(send_n);
    for (uint64_t j = 0; j < send_n; ++j) o.send[j] = value(salt, i, r, j);
    o.recv.assign(recv_n, 0x7777777777777777ll);
    kf_op_options_t opt = KF_OP_OPTIONS_INITIALIZER;
    opt.priority = (i * 7) % 5 - 2;
    opt.partition_bytes = i % 3 == 0 ? 4096 : 0;
    const std::string name = "s" + std::to_string(salt) + "." + std::to_string(i % 7);
    kf_status_t st = KF_SUCCESS;
    switch (o.kind) {
      case kAllReduce:
        st = kf_iall_reduce(c, name.c_str(), o.send.data(), o.recv.data(), o.count, KF_INT64,
                            KF_SUM, &opt, &o.req);
        break;
      case kBroadcast:
        st = kf_ibroadcast(c, name.c_str(), o.send.data(), o.recv.data(), o.count, KF_INT64, o.root,
                           &opt, &o.req);
        break;
      case kAllGather:
        st = kf_iall_gather(c, name.c_str(), o.send.data(), o.recv.data(), o.count, KF_INT64, &opt,
                            &o.req);
        break;
      case kReduceScatter:
        st = kf_ireduce_scatter(c, name.c_str(), o.send.data(), o.recv.data(), o.count, KF_INT64,
                                KF_SUM, &opt, &o.req);
        break;
      default:
        st = kf_ibarrier(c, name.c_str(), &opt, &o.req);
        break;
    }
    CHECK(st == KF_SUCCESS, "comm %d op %d submit: %s: %s", salt, i, kf_status_string(st),
          kf_comm_last_error(c));
  }
  for (int i = nops - 1; i >= 0; --i) {
    Op& o = ops[static_cast<size_t>(i)];
    if (o.req == nullptr) continue;
    kf_status_t st = kf_request_wait(o.req);
    CHECK(st == KF_SUCCESS, "comm %d op %d wait: %s: %s", salt, i, kf_status_string(st),
          kf_request_error(o.req));
    kf_request_free(o.req);
    if (st != KF_SUCCESS) continue;
    uint64_t wrong = 0;
    for (uint64_t j = 0; j < o.recv.size() && o.kind != kBarrier; ++j) {
      int64_t want = 0;
      switch (o.kind) {
        case kAllReduce:
          for (int q = 0; q < n; ++q) want += value(salt, i, q, j);
          break;
        case kBroadcast:
          want = value(salt, i, o.root, j);
          break;
        case kAllGather:
          want = value(salt, i, static_cast<int>(j / o.count), j % o.count);
          break;
        default:  // reduce_scatter: block r of every rank's send buffer
          for (int q = 0; q < n; ++q) want += value(salt, i, q, uint64_t(r) * o.count + j);
          break;
      }
      if (o.recv[j] != want) ++wrong;
    }
    CHECK(wrong == 0, "comm %d op %d (kind %d, count %" PRIu64 "): %" PRIu64 " wrong elements",
          salt, i, static_cast<int>(o.kind), o.count, wrong);
  }
}

// See the top: kf_request_wait_any across communicators.
void wait_any_across(kf_comm_t world, kf_comm_t half, int rank, int size) {
  int half_size = 0;
  kf_comm_size(half, &half_size);
  const bool with_rank0 = rank < size / 2;  // rank 0's half
  int64_t one = 1, all = 0, mine = rank + 1, sum = 0;
  if (rank == 0) {
    kf_request_t reqs[2] = {nullptr, nullptr};
    CHECK(kf_iall_reduce(world, "any.slow", &one, &all, 1, KF_INT64, KF_SUM, nullptr, &reqs[0]) ==
              KF_SUCCESS,
          "submit any.slow");
    CHECK(kf_iall_reduce(half, "any.fast", &mine, &sum, 1, KF_INT64, KF_SUM, nullptr, &reqs[1]) ==
              KF_SUCCESS,
          "submit any.fast");
    size_t index = 9;
    kf_status_t st = kf_request_wait_any(2, reqs, &index);
    CHECK(st == KF_SUCCESS && index == 1, "wait_any across communicators: %s, index %zu",
          kf_status_string(st), index);
    CHECK(sum == int64_t(half_size) * (half_size + 1) / 2, "any.fast sum %" PRId64, sum);
    CHECK(kf_request_wait(reqs[0]) == KF_SUCCESS && all == size, "any.slow: %" PRId64, all);
    for (kf_request_t r : reqs) kf_request_free(r);
    return;
  }
  if (with_rank0) {
    kf_request_t f = nullptr;
    CHECK(kf_iall_reduce(half, "any.fast", &mine, &sum, 1, KF_INT64, KF_SUM, nullptr, &f) ==
                  KF_SUCCESS &&
              kf_request_wait(f) == KF_SUCCESS,
          "any.fast on rank %d", rank);
    kf_request_free(f);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  kf_request_t r = nullptr;
  CHECK(kf_iall_reduce(world, "any.slow", &one, &all, 1, KF_INT64, KF_SUM, nullptr, &r) ==
                KF_SUCCESS &&
            kf_request_wait(r) == KF_SUCCESS && all == size,
        "any.slow on rank %d", rank);
  kf_request_free(r);
}

}  // namespace

int main(int argc, char** argv) {
  int nops = 60;
  for (int i = 1; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], "--ops")) nops = std::atoi(argv[i + 1]);
  }
  int rank = -1, size = -1;
  kf_comm_t world = kfmp::init_or_die("split_async_mp", &rank, &size);
  g_rank = rank;
  kf_comm_t parity = nullptr, half = nullptr;
  kf_status_t st = kf_comm_split(world, rank % 2, rank, nullptr, &parity);
  CHECK(st == KF_SUCCESS, "parity split: %s", kf_comm_last_error(world));
  st = kf_comm_split(world, rank < size / 2 ? 0 : 1, size - rank, nullptr, &half);
  CHECK(st == KF_SUCCESS, "half split: %s", kf_comm_last_error(world));
  if (parity != nullptr && half != nullptr) {
    // Salts differ per communicator and per child (color), so a message that
    // went to the wrong communicator could not give the right numbers.
    std::thread a(run_comm, parity, 10 + rank % 2, nops);
    std::thread b(run_comm, half, 20 + (rank < size / 2 ? 0 : 1), nops);
    run_comm(world, 1, nops);
    a.join();
    b.join();
    wait_any_across(world, half, rank, size);
    // Blocking calls still work on all three afterwards.
    for (kf_comm_t c : {parity, half, world}) {
      int64_t one = 1, sum = 0;
      int n = 0;
      kf_comm_size(c, &n);
      st = kf_all_reduce(c, &one, &sum, 1, KF_INT64, KF_SUM);
      CHECK(st == KF_SUCCESS && sum == n, "final blocking all_reduce: %s", kf_status_string(st));
    }
  }
  if (parity != nullptr) kf_comm_destroy(parity);
  if (half != nullptr) kf_comm_destroy(half);
  kf_comm_destroy(world);
  if (g_failed.load() > 0) {
    std::fprintf(stderr, "[%d] split_async_mp: %d checks failed\n", rank, g_failed.load());
    return 1;
  }
  std::printf("[%d] split_async_mp: all checks passed\n", rank);
  return 0;
}
