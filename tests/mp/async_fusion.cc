// Operation fusion (sched/fusion.h) with real ranks. Default run: hundreds of
// small all_reduces (fused) and some large ones (not fused), several dtypes
// and ops, in place and not, submitted from two threads in a different
// order on every rank, completed by kf_request_wait_all, by polling
// kf_request_test and by callbacks alone; then 50 operations completed by
// callbacks with no thread waiting at all; then 24 submitted late by the last
// rank (the peers' data already in: over TCP they complete inside the
// kf_iall_reduce call), half of them never waited for there, so that their
// frames leave by the fuser's cycle alone; every element is checked exactly.
//   --count-bundles   (run with KF_FUSION_CYCLE_US large) 32 tiny operations
//                     submitted before any wait travel as exactly one bundle
//                     per peer: the fuser's counters say so.
//   --late-data       (KF_FUSION_BUNDLE_BYTES one signature frame, a long
//                     KF_FUSION_CYCLE_US) a callback-only operation whose
//                     last data comes after the thread that waited for
//                     another request returned: the fuser's timer must move
//                     it (shared memory has no progress thread).
//   --fusion-off-last the last rank turns fusion off (KF_FUSION_THRESHOLD_BYTES
//                     = 0): a small all_reduce must fail on every rank with
//                     KF_ERR_INVALID_USAGE naming fusion, not hang.
//   --lane-passes     (the shared-memory lane, KF_FUSION_CYCLE_US and
//                     KF_FUSION_THRESHOLD_BYTES large) 33 all_reduces in six
//                     groups of one dtype and op (four one shot, two staged
//                     over more than a staging buffer; every third in place),
//                     submitted in a per-rank order by every rank before any
//                     waits, run as exactly the fused passes the lane's
//                     rule makes of them (its counters say so: six at the
//                     defaults) that complete in priority order; a
//                     partitioned one after them is not fused; every
//                     element exact.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "api/handle.h"
#include "base/config.h"
#include "transport/shm/lane_log.h"
#include "mp_common.h"

namespace {

struct OpCase {
  std::string name;
  kf_dtype_t dtype;
  kf_op_t op;
  size_t count;
  bool inplace;
  std::vector<char> send, recv;
  kf_request_t req = nullptr;
  std::atomic<int> callback_status{-1};
};

size_t dsize(kf_dtype_t t) {
  return t == KF_INT64 || t == KF_FLOAT64 ? 8 : t == KF_UINT8 ? 1 : 4;
}

// Small values whose sums, maxima and minima are exact in every dtype used.
int64_t value(int rank, size_t j, size_t i) {
  return static_cast<int64_t>((rank * 7 + j * 3 + i) % 11) - (j % 2 == 0 ? 0 : 5);
}

void put(kf_dtype_t t, void* b, size_t i, int64_t v) {
  switch (t) {
    case KF_INT32:
      static_cast<int32_t*>(b)[i] = static_cast<int32_t>(v);
      break;
    case KF_INT64:
      static_cast<int64_t*>(b)[i] = v;
      break;
    case KF_UINT8:
      static_cast<uint8_t*>(b)[i] = static_cast<uint8_t>(v);
      break;
    case KF_FLOAT32:
      static_cast<float*>(b)[i] = static_cast<float>(v);
      break;
    default:
      static_cast<double*>(b)[i] = static_cast<double>(v);
      break;
  }
}

int64_t take(kf_dtype_t t, const void* b, size_t i) {
  switch (t) {
    case KF_INT32:
      return static_cast<const int32_t*>(b)[i];
    case KF_INT64:
      return static_cast<const int64_t*>(b)[i];
    case KF_UINT8:
      return static_cast<const uint8_t*>(b)[i];
    case KF_FLOAT32:
      return static_cast<int64_t>(static_cast<const float*>(b)[i]);
    default:
      return static_cast<int64_t>(static_cast<const double*>(b)[i]);
  }
}

int64_t expected(const OpCase& c, int n, size_t j, size_t i) {
  int64_t acc = value(0, j, i);
  for (int r = 1; r < n; ++r) {
    const int64_t v = value(r, j, i);
    acc = c.op == KF_SUM ? acc + v : c.op == KF_MAX ? std::max(acc, v) : std::min(acc, v);
  }
  if (c.dtype == KF_UINT8) {
    // Elements are stored as uint8: each input wraps mod 256, and so does a sum.
    int64_t w = static_cast<uint8_t>(value(0, j, i));
    for (int r = 1; r < n; ++r) {
      const int64_t v = static_cast<uint8_t>(value(r, j, i));
      w = c.op == KF_SUM   ? static_cast<uint8_t>(w + v)
          : c.op == KF_MAX ? std::max(w, v)
                           : std::min(w, v);
    }
    return w;
  }
  return acc;
}

void on_done(kf_request_t, kf_status_t st, void* user) {
  static_cast<OpCase*>(user)->callback_status.store(static_cast<int>(st));
}

// The status c's callback reported, once it ran. Sleeps meanwhile, so this
// thread moves no data itself; the operation's deadline (KF_TIMEOUT_MS)
// bounds the wait, and ctest's timeout a callback that never comes.
int await_callback(const OpCase& c) {
  while (c.callback_status.load() < 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return c.callback_status.load();
}

kf::Fuser::Stats stats(kf_comm_t comm) {
  return comm->impl->async().fusion_stats();
}

int run_mixed(kf_comm_t comm, int rank, int n) {
  const kf_dtype_t dtypes[] = {KF_INT32, KF_INT64, KF_UINT8, KF_FLOAT32, KF_FLOAT64};
  const kf_op_t ops[] = {KF_SUM, KF_MAX, KF_MIN};
  const size_t kOps = 240;
  std::vector<OpCase> cases(kOps);
  for (size_t j = 0; j < kOps; ++j) {
    OpCase& c = cases[j];
    c.name = "fuse." + std::to_string(j);
    c.dtype = dtypes[j % 5];
    c.op = ops[(j / 5) % 3];
    // Mostly 1..1500 elements (fused below 16 KiB); every 12th 6000 (not fused).
    c.count = j % 12 == 11 ? 6000 : 1 + (j * 37) % 1500;
    c.inplace = j % 3 == 0;
    c.send.resize(c.count * dsize(c.dtype));
    for (size_t i = 0; i < c.count; ++i) put(c.dtype, c.send.data(), i, value(rank, j, i));
    c.recv.assign(c.send.size(), 0x7f);
  }
  // Each rank submits in its own order, from two threads.
  std::vector<size_t> order(kOps);
  for (size_t j = 0; j < kOps; ++j) order[j] = j;
  std::mt19937 rng(1234u + static_cast<unsigned>(rank) * 77u);
  std::shuffle(order.begin(), order.end(), rng);
  std::atomic<int> fails{0};
  auto submit = [&](size_t from, size_t step) {
    for (size_t k = from; k < kOps; k += step) {
      OpCase& c = cases[order[k]];
      kf_op_options_t o = KF_OP_OPTIONS_INITIALIZER;
      o.priority = static_cast<int32_t>(order[k] % 7);
      const bool by_callback = order[k] % 4 == 1;
      if (by_callback) {
        o.callback = on_done;
        o.user_data = &c;
      }
      void* recv = c.inplace ? c.send.data() : c.recv.data();
      kf_status_t st = kf_iall_reduce(comm, c.name.c_str(), c.send.data(), recv, c.count, c.dtype,
                                      c.op, &o, by_callback ? nullptr : &c.req);
      if (st != KF_SUCCESS) {
        std::printf("FAIL rank %d: submit %s: %s\n", rank, c.name.c_str(),
                    kf_comm_last_error(comm));
        ++fails;
      }
    }
  };
  const kf::Fuser::Stats before = stats(comm);
  std::thread helper(submit, 1, 2);
  submit(0, 2);
  helper.join();
  // Complete: every 4th j by callback alone; of the rest, polled with
  // kf_request_test for j % 4 == 2, waited for together otherwise.
  std::vector<kf_request_t> waited;
  for (size_t j = 0; j < kOps; ++j) {
    if (cases[j].req != nullptr && j % 4 != 2) waited.push_back(cases[j].req);
  }
  for (size_t j = 0; j < kOps; ++j) {
    if (j % 4 != 2 || cases[j].req == nullptr) continue;
    kf_status_t st;
    while ((st = kf_request_test(cases[j].req)) == KF_IN_PROGRESS) std::this_thread::yield();
    if (st != KF_SUCCESS) {
      std::printf("FAIL rank %d: test %s: %s\n", rank, cases[j].name.c_str(),
                  kf_request_error(cases[j].req));
      ++fails;
    }
  }
  if (kf_request_wait_all(waited.size(), waited.data()) != KF_SUCCESS) {
    std::printf("FAIL rank %d: wait_all: %s\n", rank, kf_comm_last_error(comm));
    ++fails;
  }
  for (size_t j = 0; j < kOps; ++j) {
    if (j % 4 != 1) continue;
    while (cases[j].callback_status.load() < 0)
      std::this_thread::yield();  // ctest's timeout bounds this
    if (cases[j].callback_status.load() != KF_SUCCESS) {
      std::printf("FAIL rank %d: callback of %s: %s\n", rank, cases[j].name.c_str(),
                  kf_status_string(static_cast<kf_status_t>(cases[j].callback_status.load())));
      ++fails;
    }
  }
  size_t checked = 0;
  for (size_t j = 0; j < kOps && fails == 0; ++j) {
    const OpCase& c = cases[j];
    const void* res = c.inplace ? c.send.data() : c.recv.data();
    for (size_t i = 0; i < c.count; ++i, ++checked) {
      const int64_t got = take(c.dtype, res, i), want = expected(c, n, j, i);
      if (got != want) {
        std::printf("FAIL rank %d: %s[%zu] = %lld, want %lld\n", rank, c.name.c_str(), i,
                    static_cast<long long>(got), static_cast<long long>(want));
        ++fails;
        break;
      }
    }
  }
  for (auto& c : cases) kf_request_free(c.req);
  const kf::Fuser::Stats after = stats(comm);
  const uint64_t bundles = after.bundles - before.bundles, frames = after.frames - before.frames;
  // Two frames (signature, data) per fused operation and peer at least.
  if (n > 1 && frames < 2 * bundles) {
    std::printf("FAIL rank %d: %llu frames in %llu bundles\n", rank,
                static_cast<unsigned long long>(frames), static_cast<unsigned long long>(bundles));
    ++fails;
  }
  std::printf("%s rank %d: %zu operations, %zu elements exact; %llu frames in %llu bundles\n",
              fails == 0 ? "PASS" : "FAIL", rank, kOps, checked,
              static_cast<unsigned long long>(frames), static_cast<unsigned long long>(bundles));
  return fails.load();
}

// Case j of a series: a sum of j + 1 elements of `dtype`, named prefix + j.
void fill_sum_case(OpCase* c, const char* prefix, kf_dtype_t dtype, int rank, int j) {
  c->name = prefix + std::to_string(j);
  c->dtype = dtype;
  c->op = KF_SUM;
  c->count = 1 + static_cast<size_t>(j);
  c->send.resize(c->count * dsize(dtype));
  for (size_t i = 0; i < c->count; ++i) put(dtype, c->send.data(), i, value(rank, j, i));
  c->recv.assign(c->send.size(), 0);
}

// Completion by callbacks alone, with no thread waiting for or testing any
// request: the engine must move the data itself (over shared memory there
// is no progress thread; the fuser's timer drives the rings).
int run_callbacks_only(kf_comm_t comm, int rank, int n) {
  const int kOps = 50;
  std::vector<OpCase> cases(kOps);
  for (int j = 0; j < kOps; ++j) {
    OpCase& c = cases[j];
    fill_sum_case(&c, "cb.", KF_INT64, rank, j);
    kf_op_options_t o = KF_OP_OPTIONS_INITIALIZER;
    o.callback = on_done;
    o.user_data = &c;
    if (kf_iall_reduce(comm, c.name.c_str(), c.send.data(), c.recv.data(), c.count, c.dtype, c.op,
                       &o, nullptr) != KF_SUCCESS) {
      std::printf("FAIL rank %d: submit %s: %s\n", rank, c.name.c_str(), kf_comm_last_error(comm));
      return 1;
    }
  }
  int fails = 0;
  for (int j = 0; j < kOps; ++j) {
    if (await_callback(cases[j]) != KF_SUCCESS) ++fails;
    for (size_t i = 0; i < cases[j].count && fails == 0; ++i) {
      if (take(KF_INT64, cases[j].recv.data(), i) !=
          expected(cases[j], n, static_cast<size_t>(j), i))
        ++fails;
    }
  }
  std::printf("%s rank %d: %d operations completed by callbacks alone\n",
              fails == 0 ? "PASS" : "FAIL", rank, kOps);
  return fails;
}

// Whether this thread is inside kf_iall_reduce (run_late_rank).
thread_local bool t_submitting = false;
std::atomic<int> g_inside{0};

void on_done_late(kf_request_t, kf_status_t st, void* user) {
  if (t_submitting) g_inside.fetch_add(1);
  static_cast<OpCase*>(user)->callback_status.store(static_cast<int>(st));
}

// The last rank submits after the others (who wait for their requests at
// once): the peers' data is in before its submission. Of its operations it
// waits for the even ones, and only watches the callbacks of the odd ones:
// their frames, held back after a completion inside the submission, must
// still reach the peers (by the fuser's cycle) or the peers time out.
int run_late_rank(kf_comm_t comm, int rank, int n) {
  const int kOps = 24;
  const bool late = rank == n - 1;
  std::vector<OpCase> cases(kOps);
  if (late) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  for (int j = 0; j < kOps; ++j) {
    OpCase& c = cases[j];
    fill_sum_case(&c, "late.", KF_INT32, rank, j);
    kf_op_options_t o = KF_OP_OPTIONS_INITIALIZER;
    o.callback = on_done_late;
    o.user_data = &c;
    t_submitting = true;
    kf_status_t st = kf_iall_reduce(comm, c.name.c_str(), c.send.data(), c.recv.data(), c.count,
                                    c.dtype, c.op, &o, &c.req);
    t_submitting = false;
    if (st != KF_SUCCESS) {
      std::printf("FAIL rank %d: submit %s: %s\n", rank, c.name.c_str(), kf_comm_last_error(comm));
      return 1;
    }
    if (late && j % 2 == 0 && kf_request_wait(c.req) != KF_SUCCESS) {
      std::printf("FAIL rank %d: %s: %s\n", rank, c.name.c_str(), kf_request_error(c.req));
      return 1;
    }
  }
  int fails = 0;
  for (int j = 0; j < kOps; ++j) {
    OpCase& c = cases[j];
    if (late) {
      await_callback(c);  // (checked below)
    } else if (kf_request_wait(c.req) != KF_SUCCESS) {
      std::printf("FAIL rank %d: %s: %s\n", rank, c.name.c_str(), kf_request_error(c.req));
      ++fails;
    }
    if (c.callback_status.load() != KF_SUCCESS) ++fails;
    for (size_t i = 0; i < c.count; ++i) {
      if (take(c.dtype, c.recv.data(), i) != expected(c, n, static_cast<size_t>(j), i)) ++fails;
    }
  }
  // Every rank is done before the requests go: the late rank's odd ones
  // completed (callbacks) before their frames had necessarily left.
  if (kf_barrier(comm) != KF_SUCCESS) ++fails;
  for (auto& c : cases) kf_request_free(c.req);
  std::printf("%s rank %d: %d operations submitted %s; %d completed inside kf_iall_reduce\n",
              fails == 0 ? "PASS" : "FAIL", rank, kOps, late ? "late" : "first", g_inside.load());
  return fails;
}

// Over shared memory, no thread moves the data of a fused operation that
// completes by callback alone but the fuser's timer, which sleeps while a
// thread waiting for a request drives the rings: when that thread returns,
// the timer must drive them again. Run with KF_FUSION_BUNDLE_BYTES of one
// signature frame (it leaves at once, alone; a data frame waits for the
// cycle) and a long KF_FUSION_CYCLE_US. The other ranks submit "drive.y"
// (callback only) and "drive.x", and wait for x while the last rank sleeps;
// the last rank then submits x, waits for it, and submits y, which completes
// at its submission: its signature frame leaves at once, its data a cycle
// later, when no thread on the other ranks waits any more. Their y must
// still complete, and before KF_TIMEOUT_MS.
int run_late_data(kf_comm_t comm, int rank, int n) {
  const bool last = rank == n - 1;
  OpCase x, y;
  fill_sum_case(&x, "drive.x", KF_INT32, rank, 0);
  fill_sum_case(&y, "drive.y", KF_INT32, rank, 0);
  auto submit_y = [&] {
    kf_op_options_t o = KF_OP_OPTIONS_INITIALIZER;
    o.callback = on_done;
    o.user_data = &y;
    return kf_iall_reduce(comm, y.name.c_str(), y.send.data(), y.recv.data(), y.count, y.dtype,
                          y.op, &o, nullptr);
  };
  auto submit_x = [&] {
    return kf_iall_reduce(comm, x.name.c_str(), x.send.data(), x.recv.data(), x.count, x.dtype,
                          x.op, nullptr, &x.req);
  };
  if (last) std::this_thread::sleep_for(std::chrono::milliseconds(400));
  if ((!last && submit_y() != KF_SUCCESS) || submit_x() != KF_SUCCESS) {
    std::printf("FAIL rank %d: submit: %s\n", rank, kf_comm_last_error(comm));
    return 1;
  }
  int fails = 0;
  if (kf_request_wait(x.req) != KF_SUCCESS) {
    std::printf("FAIL rank %d: %s: %s\n", rank, x.name.c_str(), kf_request_error(x.req));
    ++fails;
  }
  if (last) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (submit_y() != KF_SUCCESS) {
      std::printf("FAIL rank %d: submit: %s\n", rank, kf_comm_last_error(comm));
      return 1;
    }
  }
  const int st = await_callback(y);
  if (st != KF_SUCCESS) {
    std::printf("FAIL rank %d: callback of %s: %s\n", rank, y.name.c_str(),
                kf_status_string(static_cast<kf_status_t>(st)));
    ++fails;
  }
  for (const OpCase* c : {&x, &y}) {
    if (fails == 0 && take(c->dtype, c->recv.data(), 0) != expected(*c, n, 0, 0)) {
      std::printf("FAIL rank %d: %s: wrong result\n", rank, c->name.c_str());
      ++fails;
    }
  }
  if (kf_barrier(comm) != KF_SUCCESS) ++fails;
  kf_request_free(x.req);
  std::printf("%s rank %d: data of a callback-only operation after the last waiter left\n",
              fails == 0 ? "PASS" : "FAIL", rank);
  return fails;
}

// With a long cycle, nothing leaves before the first wait: 32 tiny operations
// submitted by every rank before any waits are exactly one bundle per peer
// (2 frames each: signature and data).
int run_count_bundles(kf_comm_t comm, int rank, int n) {
  const int kOps = 32;
  std::vector<int32_t> in(kOps), out(kOps, 0);
  std::vector<kf_request_t> reqs(kOps);
  const kf::Fuser::Stats before = stats(comm);
  for (int j = 0; j < kOps; ++j) {
    in[j] = rank + j;
    std::string name = "tiny." + std::to_string(j);
    if (kf_iall_reduce(comm, name.c_str(), &in[j], &out[j], 1, KF_INT32, KF_SUM, nullptr,
                       &reqs[j]) != KF_SUCCESS) {
      std::printf("FAIL rank %d: submit: %s\n", rank, kf_comm_last_error(comm));
      return 1;
    }
  }
  const kf::Fuser::Stats queued = stats(comm);
  int fails = 0;
  // Every rank has submitted everything before any rank waits (and so
  // sends): no operation can complete, and flush, while its rank still
  // submits.
  if (kf_barrier(comm) != KF_SUCCESS) ++fails;
  if (kf_request_wait_all(reqs.size(), reqs.data()) != KF_SUCCESS) {
    std::printf("FAIL rank %d: wait_all: %s\n", rank, kf_request_error(reqs[0]));
    ++fails;
  }
  const kf::Fuser::Stats after = stats(comm);
  for (int j = 0; j < kOps; ++j) {
    if (out[j] != n * (n - 1) / 2 + n * j) ++fails;
    kf_request_free(reqs[j]);
  }
  const uint64_t bundles = after.bundles - before.bundles, frames = after.frames - before.frames;
  const bool exact = queued.bundles == before.bundles && bundles == static_cast<uint64_t>(n - 1) &&
                     frames == static_cast<uint64_t>(2 * kOps * (n - 1));
  if (!exact) ++fails;
  std::printf(
      "%s rank %d: %d tiny all_reduces: %llu frames in %llu bundles (want %d in %d), %llu sent "
      "before the wait\n",
      fails == 0 ? "PASS" : "FAIL", rank, kOps, static_cast<unsigned long long>(frames),
      static_cast<unsigned long long>(bundles), 2 * kOps * (n - 1), n - 1,
      static_cast<unsigned long long>(queued.bundles - before.bundles));
  return fails;
}

// The lane's fusion (sched/async_lane.h): fused passes hold the ready
// single-partition operations in priority order, of one dtype and op, up to
// KF_FUSION_PASS_BYTES: small ones in one shot, larger ones staged in rounds
// of a staging buffer that span operations (odd sizes: a rank's share of a
// round starts and ends inside operations), every third in place.
int run_lane_passes(kf_comm_t comm, int rank, int n) {
  struct Group {
    kf_dtype_t dtype;
    kf_op_t op;
    size_t count;  // elements per operation
    int ops;
  };
  // 8 x 1 KiB, 8 x 400 B, 4 x 16 KiB (64 KiB: one shot), 4 x 800 B, then
  // staged: 6 x 300 KiB + 4 B (1.8 MB, more than one staging buffer at
  // np 2..4) and 3 x 312.5 KiB + 8 B of averages.
  const Group groups[] = {{KF_FLOAT32, KF_SUM, 256, 8},  {KF_INT32, KF_MAX, 100, 8},
                          {KF_FLOAT64, KF_SUM, 2048, 4}, {KF_FLOAT64, KF_AVG, 100, 4},
                          {KF_INT32, KF_SUM, 76801, 6},  {KF_FLOAT64, KF_AVG, 40001, 3}};
  // The passes the lane's rule makes of them (sched/async_lane.h, 3.: in
  // priority order, one dtype and op, each of more than a record's payload
  // and at most LaneStats::fuse_max, at most KF_FUSION_PASS_BYTES and the
  // partition size in all; a pass of one operation is not a fused pass):
  // six at the defaults; with staging buffers of 4032 bytes only the groups
  // of 1 KiB, 400 B and 800 B operations share passes.
  const uint64_t fuse_max = comm->impl->async().lane_stats().fuse_max;
  const uint64_t limit = std::min<uint64_t>(
      static_cast<uint64_t>(kf::knob_int(kf::Knob::KF_FUSION_PASS_BYTES)),
      static_cast<uint64_t>(kf::knob_int(kf::Knob::KF_PARTITION_BYTES)));
  uint64_t want_passes = 0, want_fused = 0;
  for (const Group& g : groups) {
    const uint64_t bytes = g.count * dsize(g.dtype);
    if (bytes <= kf::LaneRecord::kPayloadBytes || bytes > fuse_max) continue;  // each alone
    const uint64_t per_pass = std::max<uint64_t>(1, limit / bytes);
    for (uint64_t left = static_cast<uint64_t>(g.ops); left > 0;) {
      const uint64_t in_pass = std::min(left, per_pass);
      if (in_pass >= 2) {
        ++want_passes;
        want_fused += in_pass;
      }
      left -= in_pass;
    }
  }
  struct Case {
    kf_dtype_t dtype;
    kf_op_t op;
    size_t count;
    int32_t priority;
    uint64_t partition_bytes;
    std::vector<char> send, recv;
    kf_request_t req = nullptr;
    int completed = -1;  // the callback's place in the completion order
  };
  std::vector<Case> cases;
  for (const Group& g : groups) {
    for (int i = 0; i < g.ops; ++i) {
      cases.push_back({g.dtype, g.op, g.count, static_cast<int32_t>(cases.size()), 0, {}, {}});
    }
  }
  // Small too, but in two partitions: never fused.
  cases.push_back({KF_FLOAT32, KF_SUM, 2048, static_cast<int32_t>(cases.size()), 4096, {}, {}});
  // Averages of multiples of n, so that every average is exact.
  auto value_of = [&](const Case& c, int r, size_t j, size_t i) {
    return c.op == KF_AVG ? static_cast<int64_t>(n) * static_cast<int64_t>(r + j + i % 5)
                          : value(r, j, i);
  };
  for (size_t j = 0; j < cases.size(); ++j) {
    Case& c = cases[j];
    c.send.resize(c.count * dsize(c.dtype));
    for (size_t i = 0; i < c.count; ++i) put(c.dtype, c.send.data(), i, value_of(c, rank, j, i));
    c.recv.assign(c.send.size(), 0x7f);
    // Every third in place (recv holds the input; send is not read).
    if (j % 3 == 2) c.recv = c.send;
  }
  std::vector<size_t> order(cases.size());
  for (size_t j = 0; j < order.size(); ++j) order[j] = j;
  std::mt19937 rng(99u + static_cast<unsigned>(rank) * 13u);
  std::shuffle(order.begin(), order.end(), rng);
  const kf::LaneStats before = comm->impl->async().lane_stats();
  int fails = 0;
  // Callbacks run on the driver, one at a time: a plain counter will do.
  static int completions;
  completions = 0;
  auto on_complete = [](kf_request_t, kf_status_t, void* user) {
    static_cast<Case*>(user)->completed = completions++;
  };
  for (size_t j : order) {
    Case& c = cases[j];
    kf_op_options_t o = KF_OP_OPTIONS_INITIALIZER;
    o.priority = c.priority;
    o.partition_bytes = c.partition_bytes;
    o.callback = on_complete;
    o.user_data = &c;
    const std::string name = "lane." + std::to_string(j);
    const void* send = j % 3 == 2 ? c.recv.data() : c.send.data();
    if (kf_iall_reduce(comm, name.c_str(), send, c.recv.data(), c.count, c.dtype, c.op, &o,
                       &c.req) != KF_SUCCESS) {
      std::printf("FAIL rank %d: submit %s: %s\n", rank, name.c_str(), kf_comm_last_error(comm));
      return 1;
    }
  }
  // Every rank's records are in before any rank drives (the lane thread
  // waits a cycle for small operations): the first pass sees them all.
  if (kf_barrier(comm) != KF_SUCCESS) ++fails;
  std::vector<kf_request_t> reqs;
  for (const Case& c : cases) reqs.push_back(c.req);
  if (kf_request_wait_all(reqs.size(), reqs.data()) != KF_SUCCESS) {
    std::printf("FAIL rank %d: wait_all: %s\n", rank, kf_comm_last_error(comm));
    ++fails;
  }
  const kf::LaneStats after = comm->impl->async().lane_stats();
  size_t wrong = 0, out_of_order = 0;
  for (size_t j = 0; j < cases.size(); ++j) {
    const Case& c = cases[j];
    if (c.completed != static_cast<int>(j)) ++out_of_order;  // cases are in priority order
    for (size_t i = 0; i < c.count; ++i) {
      int64_t want = value_of(c, 0, j, i);
      for (int r = 1; r < n; ++r) {
        const int64_t v = value_of(c, r, j, i);
        want = c.op == KF_MAX ? std::max(want, v) : want + v;
      }
      if (c.op == KF_AVG) want /= n;
      if (take(c.dtype, c.recv.data(), i) != want) ++wrong;
    }
    kf_request_free(c.req);
  }
  const uint64_t passes = after.fused_passes - before.fused_passes,
                 fused = after.fused_ops - before.fused_ops;
  if (wrong > 0 || out_of_order > 0 || passes != want_passes || fused != want_fused) ++fails;
  std::printf(
      "%s rank %d: %zu all_reduces, %zu wrong elements, %zu out of priority order; %llu fused "
      "passes of %llu operations (want %llu of %llu)\n",
      fails == 0 ? "PASS" : "FAIL", rank, cases.size(), wrong, out_of_order,
      static_cast<unsigned long long>(passes), static_cast<unsigned long long>(fused),
      static_cast<unsigned long long>(want_passes), static_cast<unsigned long long>(want_fused));
  return fails;
}

int run_fusion_off_last(kf_comm_t comm, int rank) {
  int32_t in[10] = {1}, out[10] = {0};
  kf_request_t r = nullptr;
  kf_status_t st = kf_iall_reduce(comm, "knob", in, out, 10, KF_INT32, KF_SUM, nullptr, &r);
  kf_status_t w = st == KF_SUCCESS ? kf_request_wait(r) : st;
  const char* text = r != nullptr ? kf_request_error(r) : kf_comm_last_error(comm);
  const bool ok = w == KF_ERR_INVALID_USAGE && std::strstr(text, "fusion") != nullptr &&
                  std::strstr(text, "KF_FUSION_THRESHOLD_BYTES") != nullptr;
  std::printf("%s rank %d: fusion on some ranks only -> %s: %s\n", ok ? "PASS" : "FAIL", rank,
              kf_status_string(w), text);
  kf_request_free(r);
  // The communicator still works.
  int32_t one = 1, sum = 0;
  bool after = kf_all_reduce(comm, &one, &sum, 1, KF_INT32, KF_SUM) == KF_SUCCESS;
  return ok && after ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "--fusion-off-last") {
    const char* r = std::getenv("KF_RANK");
    const char* s = std::getenv("KF_SIZE");
    if (r != nullptr && s != nullptr && std::atoi(r) == std::atoi(s) - 1) {
      setenv("KF_FUSION_THRESHOLD_BYTES", "0", 1);
    }
  }
  int rank = 0, n = 1;
  kf_comm_t comm = kfmp::init_or_die("mp_async_fusion", &rank, &n);
  int fails = mode == "--count-bundles" ? run_count_bundles(comm, rank, n)
              : mode == "--late-data"   ? run_late_data(comm, rank, n)
              : mode == "--lane-passes" ? run_lane_passes(comm, rank, n)
              : mode == "--fusion-off-last"
                  ? run_fusion_off_last(comm, rank)
                  : run_mixed(comm, rank, n) + run_callbacks_only(comm, rank, n) +
                        run_late_rank(comm, rank, n);
  kf_comm_destroy(comm);
  return fails == 0 ? 0 : 1;
}
