// Who moves the shared-memory lane's data when nobody waits for it
// (src/sched/async_lane.h, 5.): the lane thread, also after a phase where
// waiting threads drove the lane. Every sum is checked exactly (integers);
// every wait for the lane thread is bounded (5 s, 1 s), so that an
// operation left to nobody fails instead of hanging.
//  1. Waiters lead, then leave work behind: after 10 steps that a waiter
//     drives (36 MiB each: the lane thread's looks grow rarer), six
//     operations (1 MiB in two partitions, never fused) of which the thread
//     waits for the most urgent only, then sleeps, then three that nobody
//     waits for: the lane thread must complete them all (callbacks count
//     them; this thread makes no library call meanwhile).
//  2. Beside waiters: steps of a tiny and a 1 MiB operation that the
//     thread waits for, each submitted by every rank before anyone waits
//     (a blocking barrier), so that a waiter finds them ready and runs
//     nothing else; and one less urgent operation (1 MiB, two partitions)
//     that nobody waits for, submitted after 20 such steps. Waiters drive
//     only up to what they wait for (they never append it to the shared
//     log): a lane thread must, while the steps go on (within 1 s; the
//     steps stop when every rank saw it complete, or after 5000).
#include <kungfu/async.h>
#include <kungfu/kungfu.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "lane_checks.h"
#include "mp_common.h"

namespace {

using lanetest::g_fails;
using lanetest::g_rank;
using lanetest::report;
using lanetest::value;

std::atomic<int> g_left_done{0};
void on_left_done(kf_request_t, kf_status_t st, void*) {
  if (st == KF_SUCCESS) g_left_done.fetch_add(1);
}

// Sleeps until `want` callbacks of on_left_done() came, at most 20 s;
// returns the ms it took.
double await_callbacks(int want) {
  const auto t0 = std::chrono::steady_clock::now();
  while (g_left_done.load() < want &&
         std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void left_behind(kf_comm_t comm, int rank, int n) {
  // The lead steps' operations are 3 MiB (36 MiB a step); the others' 1 MiB,
  // in two partitions: never fused, so the waiter's operation runs alone.
  const size_t count = 262144, lead_count = 3 * count;
  const int kLead = 12, kLeft = 6, kAlone = 3;
  std::vector<std::vector<int32_t>> buf(kLead, std::vector<int32_t>(lead_count));
  auto fill = [&] {
    for (auto& b : buf) {
      for (size_t i = 0; i < lead_count; ++i) b[i] = value(rank, i);
    }
  };
  // Whether the first `ops` buffers hold the sums of their first `elems`.
  auto exact = [&](int ops, size_t elems) {
    for (int j = 0; j < ops; ++j) {
      for (size_t i = 0; i < elems; ++i) {
        int64_t want = 0;
        for (int q = 0; q < n; ++q) want += value(q, i);
        if (buf[j][i] != want) return false;
      }
    }
    return true;
  };
  kf_request_t r[kLead] = {};
  auto free_all = [&] {
    for (auto& q : r) {
      kf_request_free(q);
      q = nullptr;
    }
  };
  bool ok = true;
  for (int step = 0; step < 10 && ok; ++step) {  // waiters lead
    fill();
    for (int j = 0; j < kLead; ++j) {
      const std::string name = "lead." + std::to_string(j);
      ok = ok && kf_iall_reduce(comm, name.c_str(), buf[j].data(), buf[j].data(), lead_count,
                                KF_INT32, KF_SUM, nullptr, &r[j]) == KF_SUCCESS;
    }
    ok = ok && kf_request_wait_all(kLead, r) == KF_SUCCESS;
    free_all();
  }
  ok = ok && exact(kLead, lead_count);
  kf_op_options_t o = KF_OP_OPTIONS_INITIALIZER;
  o.callback = on_left_done;
  o.partition_bytes = count * sizeof(int32_t) / 2;
  auto submit = [&](const char* prefix, int ops) {
    fill();
    for (int j = 0; j < ops; ++j) {
      const std::string name = prefix + std::to_string(j);
      o.priority = j;  // the first runs first
      ok = ok && kf_iall_reduce(comm, name.c_str(), buf[j].data(), buf[j].data(), count, KF_INT32,
                                KF_SUM, &o, &r[j]) == KF_SUCCESS;
    }
  };
  submit("left.", kLeft);
  ok = ok && kf_request_wait(r[0]) == KF_SUCCESS;
  const double left_ms = await_callbacks(kLeft);
  const int left_done = g_left_done.load();  // (before the wait below drives anything)
  // (A callback runs just before its request completes: at once.)
  ok = ok && kf_request_wait_all(kLeft, r) == KF_SUCCESS;
  const bool left_ok = ok && exact(kLeft, count) && left_done == kLeft && left_ms < 5000;
  report(left_ok, "left behind by a waiter, completed by the lane thread: " +
                      std::to_string(left_done) + " of " + std::to_string(kLeft) + " callbacks, " +
                      std::to_string(left_ms) + " ms after the wait");
  free_all();
  g_left_done = 0;
  submit("alone.", kAlone);
  const double alone_ms = await_callbacks(kAlone);
  const int alone_done = g_left_done.load();
  ok = ok && kf_request_wait_all(kAlone, r) == KF_SUCCESS;
  report(ok && exact(kAlone, count) && alone_done == kAlone && alone_ms < 5000,
         "waited for by nobody, completed by the lane thread: " + std::to_string(alone_done) +
             " of " + std::to_string(kAlone) + " callbacks, " + std::to_string(alone_ms) +
             " ms after the submissions");
  free_all();
}

std::atomic<int> g_side_done{0};
void on_side_done(kf_request_t, kf_status_t st, void*) {
  if (st == KF_SUCCESS) g_side_done.fetch_add(1);
}

void beside_waiters(kf_comm_t comm, int rank, int n) {
  const size_t count = 262144;  // 1 MiB: above the tiny and the wake sizes
  std::vector<int32_t> side(count), step(count);
  for (size_t i = 0; i < count; ++i) side[i] = value(rank, i);
  kf_op_options_t o = KF_OP_OPTIONS_INITIALIZER;
  o.callback = on_side_done;
  o.priority = 100;                                 // behind every step's operation
  o.partition_bytes = count * sizeof(int32_t) / 2;  // two partitions: never fused with them
  kf_request_t side_req = nullptr;
  const int kLead = 20;
  bool ok = true;
  auto t0 = std::chrono::steady_clock::now();
  double done_ms = -1;
  int steps = 0;
  for (; ok && steps < kLead + 5000; ++steps) {
    if (steps == kLead) {
      t0 = std::chrono::steady_clock::now();
      ok = kf_iall_reduce(comm, "beside", side.data(), side.data(), count, KF_INT32, KF_SUM, &o,
                          &side_req) == KF_SUCCESS;
    }
    // Whether every rank saw the side operation complete: the steps' own
    // sums agree, so every rank leaves the loop at the same step.
    int32_t flag = g_side_done.load() > 0 ? 1 : 0, all = 0;
    for (size_t i = 0; i < 1024; ++i) step[i] = static_cast<int32_t>(i);
    kf_request_t r[2] = {nullptr, nullptr};
    ok = ok &&
         kf_iall_reduce(comm, "beside.flag", &flag, &all, 1, KF_INT32, KF_SUM, nullptr, &r[0]) ==
             KF_SUCCESS &&
         kf_iall_reduce(comm, "beside.grad", step.data(), step.data(), count, KF_INT32, KF_SUM,
                        nullptr, &r[1]) == KF_SUCCESS;
    // Every rank's records are published before anyone waits: the waiter
    // finds both ready, and the more urgent first.
    ok = ok && kf_barrier(comm) == KF_SUCCESS;
    ok = ok && kf_request_wait_all(2, r) == KF_SUCCESS;
    kf_request_free(r[0]);
    kf_request_free(r[1]);
    if (all == n) {
      done_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ok = ok && side_req != nullptr && kf_request_wait(side_req) == KF_SUCCESS;
  kf_request_free(side_req);
  bool exact = true;
  for (size_t i = 0; i < count; ++i) {
    int64_t want = 0;
    for (int q = 0; q < n; ++q) want += value(q, i);
    if (side[i] != want) exact = false;
  }
  report(ok && exact && done_ms >= 0 && done_ms < 1000,
         "less urgent than what waiters wait for, run by a lane thread while they lead: after " +
             std::to_string(done_ms) + " ms, " + std::to_string(steps - kLead) + " steps" +
             (exact ? ", exact" : ", WRONG"));
}

}  // namespace

int main() {
  int n = 1;
  kf_comm_t comm = kfmp::init_or_die("mp_async_lane_thread", &g_rank, &n);
  left_behind(comm, g_rank, n);
  beside_waiters(comm, g_rank, n);
  kf_comm_destroy(comm);
  return g_fails == 0 ? 0 : 1;
}
