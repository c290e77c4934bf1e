// The scheduling order of the message path (sched/async_engine.h, point 2),
// with real ranks (run over TCP, where every asynchronous operation takes
// the message path):
//
//  --mode priority: every rank submits a bulk all_reduce (16 MiB of int32
//    in 64 KiB partitions, priority 10) and right after it an urgent one
//    (128 KiB in two partitions, priority 0). Under a credit of one
//    partition (KF_CREDIT_BYTES=65536) the urgent one overtakes the bulk
//    one's queued partitions: when kf_request_wait(urgent) returns, the bulk
//    operation must still be in progress (in FIFO order it would have
//    finished first). Both results are checked exactly, every iteration.
//
//  --mode equal: 16 all_reduces of 128 KiB (one partition each), all of one
//    priority. Rank 0 submits them, then enters a blocking barrier; the other
//    ranks submit them after the barrier, so that on those ranks every
//    operation is confirmed at its submission. The equal-priority window
//    (sched/credit_window.h) lets a rank start up to 2x the credit and at
//    least two at once, and peers' starts add theirs. Run with KF_TIMELINE;
//    `timeline_check PREFIX NP 48 MIN` then wants MIN or more partitions
//    running at once on some rank. At np 2, with a credit of one operation
//    (KF_CREDIT_BYTES=131072), MIN is 3: the most on any rank was 4-5 with
//    the window and 2 with the plain window (a rank's own admissions one at
//    a time). At np 3, with a credit of two (262144), MIN is 8: 9-12 with
//    the window, 4-7 with the plain one (6 runs each, session 29). Results
//    are checked exactly.
//    A failing rank stops early; kfrun then stops the others.
//
//  --mode eager: 16 all_reduces of 64 KiB, small enough to start at their
//    submission (AsyncEngine::kEagerBytes), submitted by every rank at once,
//    iteration after iteration: over TCP each is an event partition
//    (sched/async_event.h) that starts while peers' signature frames and
//    data arrive. Results are checked exactly.
//
// Usage: mp_async_order --mode priority|equal|eager [--iters N]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "data.h"
#include "mp_common.h"

namespace {

int g_rank = 0, g_size = 1, g_fails = 0;

void fail(const std::string& what) {
  if (g_fails++ < 10) std::printf("FAIL rank %d: %s\n", g_rank, what.c_str());
}

// This rank's input for an all_reduce (sum) of `count` int32, varied by
// `salt` (the shared test data: perf/common/data.h).
std::vector<int32_t> input(uint32_t salt, uint64_t count) {
  std::vector<int32_t> v(count);
  kft::fill_input(v.data(), count, KF_INT32, kft::Kind::kReduce, KF_SUM, g_rank, 0, salt);
  return v;
}

// Checks an all_reduce (sum) result exactly; reports the first wrong element.
void check_sum(const std::string& what, uint32_t salt, const std::vector<int32_t>& got) {
  std::vector<int32_t> want(got.size());
  kft::fill_expected_reduce(want.data(), want.size(), KF_INT32, KF_SUM, g_size, 0, salt);
  uint64_t first_bad = 0;
  if (kft::count_wrong(got.data(), want.data(), got.size(), KF_INT32, KF_SUM, &first_bad) != 0) {
    fail(what + ": element " + std::to_string(first_bad) + " is " +
         std::to_string(got[first_bad]) + ", want " + std::to_string(want[first_bad]));
  }
}

kf_request_t submit(kf_comm_t comm, const char* name, std::vector<int32_t>* buf, int32_t priority,
                    uint64_t partition_bytes) {
  kf_op_options_t o = KF_OP_OPTIONS_INITIALIZER;
  o.priority = priority;
  o.partition_bytes = partition_bytes;
  kf_request_t req = nullptr;
  kf_status_t st =
      kf_iall_reduce(comm, name, buf->data(), buf->data(), buf->size(), KF_INT32, KF_SUM, &o, &req);
  if (st != KF_SUCCESS) fail(std::string("submit ") + name + ": " + kf_comm_last_error(comm));
  return req;
}

void run_priority(kf_comm_t comm, int iters) {
  constexpr uint64_t kBulk = (16u << 20) / sizeof(int32_t);
  constexpr uint64_t kUrgent = (128u << 10) / sizeof(int32_t);
  constexpr uint64_t kPartition = 64u << 10;
  for (int it = 0; it < iters && g_fails == 0; ++it) {
    std::vector<int32_t> bulk = input(it, kBulk), urgent = input(it, kUrgent);
    kf_request_t b = submit(comm, "bulk", &bulk, 10, kPartition);
    kf_request_t u = submit(comm, "urgent", &urgent, 0, kPartition);
    if (b == nullptr || u == nullptr) {
      // Neither buffer may go while the other operation still runs.
      for (kf_request_t r : {b, u}) {
        if (r == nullptr) continue;
        kf_request_wait(r);
        kf_request_free(r);
      }
      return;
    }
    kf_status_t st = kf_request_wait(u);
    const kf_status_t bulk_then = kf_request_test(b);
    if (st != KF_SUCCESS) fail(std::string("urgent: ") + kf_request_error(u));
    if (bulk_then != KF_IN_PROGRESS) {
      fail("iteration " + std::to_string(it) + ": the bulk operation was " +
           (bulk_then == KF_SUCCESS ? "complete" : kf_status_string(bulk_then)) +
           " when the urgent one, submitted after it, completed: no overtaking");
    }
    st = kf_request_wait(b);
    if (st != KF_SUCCESS) fail(std::string("bulk: ") + kf_request_error(b));
    kf_request_free(u);
    kf_request_free(b);
    check_sum("urgent", it, urgent);
    check_sum("bulk", it, bulk);
  }
}

void run_equal(kf_comm_t comm, int iters) {
  constexpr int kOps = 16;
  constexpr uint64_t kCount = (128u << 10) / sizeof(int32_t);
  for (int it = 0; it < iters && g_fails == 0; ++it) {
    // Filled before any submission, so that the submissions follow one
    // another closely (the overlap is measured on the ranks after rank 0).
    std::vector<std::vector<int32_t>> bufs(kOps);
    for (int k = 0; k < kOps; ++k) bufs[k] = input(it + k, kCount);
    std::vector<kf_request_t> reqs(kOps, nullptr);
    auto submit_all = [&] {
      for (int k = 0; k < kOps; ++k) {
        reqs[k] = submit(comm, ("eq" + std::to_string(k)).c_str(), &bufs[k], 5, 0);
      }
    };
    if (g_rank == 0) submit_all();
    if (kf_barrier(comm) != KF_SUCCESS) fail(std::string("barrier: ") + kf_comm_last_error(comm));
    if (g_rank != 0) submit_all();
    if (kf_request_wait_all(reqs.size(), reqs.data()) != KF_SUCCESS) {
      fail(std::string("wait_all: ") + kf_comm_last_error(comm));
    }
    for (int k = 0; k < kOps; ++k) {
      if (reqs[k] != nullptr) kf_request_free(reqs[k]);
      check_sum("eq" + std::to_string(k), it + k, bufs[k]);
    }
  }
}

void run_eager(kf_comm_t comm, int iters) {
  constexpr int kOps = 16;
  constexpr uint64_t kCount = (64u << 10) / sizeof(int32_t);
  for (int it = 0; it < iters && g_fails == 0; ++it) {
    std::vector<std::vector<int32_t>> bufs(kOps);
    for (int k = 0; k < kOps; ++k) bufs[k] = input(it + k, kCount);
    std::vector<kf_request_t> reqs(kOps, nullptr);
    for (int k = 0; k < kOps; ++k) {
      reqs[k] = submit(comm, ("eager" + std::to_string(k)).c_str(), &bufs[k], 5, 0);
    }
    if (kf_request_wait_all(reqs.size(), reqs.data()) != KF_SUCCESS) {
      fail(std::string("wait_all: ") + kf_comm_last_error(comm));
    }
    for (int k = 0; k < kOps; ++k) {
      if (reqs[k] != nullptr) kf_request_free(reqs[k]);
      check_sum("eager" + std::to_string(k), it + k, bufs[k]);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode;
  int iters = 3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--mode")) mode = argv[i + 1];
    if (!std::strcmp(argv[i], "--iters")) iters = std::atoi(argv[i + 1]);
  }
  if (mode != "priority" && mode != "equal" && mode != "eager") {
    std::fprintf(stderr, "usage: mp_async_order --mode priority|equal|eager [--iters N]\n");
    return 2;
  }
  kf_comm_t comm = kfmp::init_or_die("mp_async_order", &g_rank, &g_size);
  if (mode == "priority") {
    run_priority(comm, iters);
  } else if (mode == "equal") {
    run_equal(comm, iters);
  } else {
    run_eager(comm, iters);
  }
  std::printf("%s rank %d: %s, %d iterations\n", g_fails == 0 ? "PASS" : "FAIL", g_rank,
              mode.c_str(), iters);
  kf_comm_destroy(comm);
  return g_fails == 0 ? 0 : 1;
}
