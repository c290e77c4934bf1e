// The shared-memory lane (src/sched/async_lane.h): asynchronous all_reduce on
// a communicator whose ranks all share one host. Every result is checked
// exactly (integers).
//  1. Sizes across every path of the lane: empty, tiny (data inside the
//     record), one-shot, staged, several partitions; sum, max and average
//     (of values that divide), in place and not, in per-rank orders.
//  2. A blocking all_reduce loop on one thread while another thread runs
//     asynchronous operations: the two never share staging buffers.
//  3. A rank far ahead: 3000 operations submitted before the others submit
//     any (this rank's record ring holds 1024): nothing is lost.
//  4. Completion without waiting: kf_request_test only (the lane thread
//     drives) and callbacks, tiny and large.
//  5. Timeout, then a late submission: the ranks that submitted 'gone' fail
//     it at KF_TIMEOUT_MS; the last rank submits it later and fails at once,
//     and the communicator still works.
//  6. A completion callback that waits: for a request still in progress
//     every kf_request_wait* returns KF_ERR_INVALID_USAGE at once (the
//     lane's driver runs callbacks, so such a wait could wait for itself),
//     for a complete one its status; the request then completes as usual.
//  7. Tiny operations around their deadline: the last rank submits eight,
//     one at a time (waiting for each), from 300 ms before the others'
//     deadline to 100 ms after it, having read the others' records already.
//     Every rank must report the same status for each (success well
//     before, the timeout well after; either near it), and a success the
//     exact sum.
//  8. Callbacks that submit again: a chain of 2000 tiny operations, each
//     submitted (fire-and-forget) by the previous one's callback. Callbacks
//     never nest (the lane completes what a callback submits on another
//     thread), every sum is exact, and kf_comm_destroy inside a callback is
//     refused with KF_ERR_INVALID_USAGE, the communicator working on.
// Who moves the data when nobody waits is tested in async_lane_thread.cc.
// Run with KF_TIMEOUT_MS=3000 (the timeouts of 5. and 7.). With --late only
// case 5 runs: over TCP it tests the message path, where the ranks that
// time out tell the silent rank (AsyncEngine::kGaveUpStep). With
// --edges-mixed only case 7 runs, the last rank with a timeout of 60 s: the
// others' earlier deadlines decide.
#include <kungfu/async.h>
#include <kungfu/kungfu.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
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

struct Case {
  std::string name;
  size_t count;
  kf_op_t op;
  bool in_place;
  uint64_t partition_bytes;
};

bool check_result(const Case& c, const std::vector<int32_t>& out, int n) {
  for (size_t i = 0; i < c.count; ++i) {
    int64_t want = 0;
    if (c.op == KF_SUM) {
      for (int r = 0; r < n; ++r) want += value(r, i);
    } else if (c.op == KF_MAX) {
      want = value(n - 1, i);
    } else {  // KF_AVG of n * (r + 1 + i % 1000) over r: a whole number
      for (int r = 0; r < n; ++r) want += static_cast<int64_t>(n) * value(r, i);
      want /= n;
    }
    if (out[i] != want) return false;
  }
  return true;
}

void sizes(kf_comm_t comm, int rank, int n) {
  std::vector<Case> cases;
  const size_t counts[] = {0, 1, 16, 1000, 70000, 300000};
  int k = 0;
  for (size_t count : counts) {
    for (kf_op_t op : {KF_SUM, KF_MAX, KF_AVG}) {
      cases.push_back(
          {"s" + std::to_string(k++), count, op, k % 2 == 0, count == 300000 ? 65536u : 0u});
    }
  }
  std::vector<std::vector<int32_t>> in(cases.size()), out(cases.size());
  std::vector<kf_request_t> reqs(cases.size(), nullptr);
  std::vector<size_t> order(cases.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::mt19937 rng(static_cast<unsigned>(rank) * 7919u + 1);
  std::shuffle(order.begin(), order.end(), rng);
  for (size_t j : order) {
    const Case& c = cases[j];
    in[j].resize(c.count);
    for (size_t i = 0; i < c.count; ++i) {
      in[j][i] = c.op == KF_AVG ? n * value(rank, i) : value(rank, i);
    }
    out[j] = c.in_place ? in[j] : std::vector<int32_t>(c.count, -1);
    kf_op_options_t o = KF_OP_OPTIONS_INITIALIZER;
    o.priority = static_cast<int32_t>(rng() % 5);
    o.partition_bytes = c.partition_bytes;
    kf_status_t st = kf_iall_reduce(comm, c.name.c_str(), c.in_place ? out[j].data() : in[j].data(),
                                    out[j].data(), c.count, KF_INT32, c.op, &o, &reqs[j]);
    if (st != KF_SUCCESS) report(false, "submit " + c.name + ": " + kf_status_string(st));
  }
  kf_status_t st = kf_request_wait_all(reqs.size(), reqs.data());
  report(st == KF_SUCCESS, std::string("sizes: wait_all -> ") + kf_status_string(st));
  int wrong = 0;
  for (size_t j = 0; j < cases.size(); ++j) {
    if (!check_result(cases[j], out[j], n)) {
      ++wrong;
      std::printf("  wrong: %s (count %zu)\n", cases[j].name.c_str(), cases[j].count);
    }
    kf_request_free(reqs[j]);
  }
  report(wrong == 0, "sizes: " + std::to_string(cases.size()) + " operations exact");
}

void beside_blocking(kf_comm_t comm, int rank, int n) {
  std::atomic<int> blocking_wrong{0};
  std::thread blocking([&] {
    std::vector<int32_t> v(50000);
    for (int it = 0; it < 30; ++it) {
      for (size_t i = 0; i < v.size(); ++i) v[i] = value(rank, i);
      if (kf_all_reduce(comm, v.data(), v.data(), v.size(), KF_INT32, KF_SUM) != KF_SUCCESS) {
        blocking_wrong.fetch_add(1);
        continue;
      }
      for (size_t i = 0; i < v.size(); ++i) {
        int64_t want = 0;
        for (int r = 0; r < n; ++r) want += value(r, i);
        if (v[i] != want) {
          blocking_wrong.fetch_add(1);
          break;
        }
      }
    }
  });
  int wrong = 0;
  for (int it = 0; it < 30; ++it) {
    std::vector<int32_t> a(40000), b(8);
    for (size_t i = 0; i < a.size(); ++i) a[i] = value(rank, i);
    for (size_t i = 0; i < b.size(); ++i) b[i] = value(rank, i);
    kf_request_t r[2];
    kf_iall_reduce(comm, "beside.a", a.data(), a.data(), a.size(), KF_INT32, KF_SUM, nullptr,
                   &r[0]);
    kf_iall_reduce(comm, "beside.b", b.data(), b.data(), b.size(), KF_INT32, KF_SUM, nullptr,
                   &r[1]);
    if (kf_request_wait_all(2, r) != KF_SUCCESS) ++wrong;
    for (size_t i = 0; i < a.size(); ++i) {
      int64_t want = 0;
      for (int q = 0; q < n; ++q) want += value(q, i);
      if (a[i] != want || (i < b.size() && b[i] != want)) {
        ++wrong;
        break;
      }
    }
    kf_request_free(r[0]);
    kf_request_free(r[1]);
  }
  blocking.join();
  report(wrong == 0 && blocking_wrong.load() == 0, "beside blocking calls: async wrong " +
                                                       std::to_string(wrong) + ", blocking wrong " +
                                                       std::to_string(blocking_wrong.load()));
}

void far_ahead(kf_comm_t comm, int rank, int n) {
  const int ops = 3000;
  if (rank != 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::vector<int32_t> in(ops), out(ops, -1);
  std::vector<kf_request_t> reqs(ops);
  for (int i = 0; i < ops; ++i) {
    in[i] = rank + i;
    std::string name = "ahead." + std::to_string(i);
    kf_iall_reduce(comm, name.c_str(), &in[i], &out[i], 1, KF_INT32, KF_SUM, nullptr, &reqs[i]);
  }
  kf_status_t st = kf_request_wait_all(reqs.size(), reqs.data());
  int wrong = 0;
  for (int i = 0; i < ops; ++i) {
    if (out[i] != n * i + n * (n - 1) / 2) ++wrong;
    kf_request_free(reqs[i]);
  }
  report(st == KF_SUCCESS && wrong == 0,
         "rank 0 " + std::to_string(ops) + " operations ahead: wrong " + std::to_string(wrong));
}

std::atomic<int> g_callbacks{0};
void on_done(kf_request_t, kf_status_t st, void*) {
  if (st == KF_SUCCESS) g_callbacks.fetch_add(1);
}

void test_only(kf_comm_t comm, int rank, int n) {
  std::vector<int32_t> tiny(4), big(200000);
  for (size_t i = 0; i < tiny.size(); ++i) tiny[i] = value(rank, i);
  for (size_t i = 0; i < big.size(); ++i) big[i] = value(rank, i);
  kf_op_options_t o = KF_OP_OPTIONS_INITIALIZER;
  o.callback = on_done;
  kf_request_t r[2];
  kf_iall_reduce(comm, "test.tiny", tiny.data(), tiny.data(), tiny.size(), KF_INT32, KF_SUM, &o,
                 &r[0]);
  kf_iall_reduce(comm, "test.big", big.data(), big.data(), big.size(), KF_INT32, KF_SUM, &o, &r[1]);
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  int done = 0;
  while (done < 2 && std::chrono::steady_clock::now() < until) {
    done = 0;
    for (auto& q : r) done += kf_request_test(q) == KF_SUCCESS ? 1 : 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  bool exact = true;
  for (size_t i = 0; i < big.size(); ++i) {
    int64_t want = 0;
    for (int q = 0; q < n; ++q) want += value(q, i);
    if (big[i] != want || (i < tiny.size() && tiny[i] != want)) exact = false;
  }
  report(done == 2 && exact && g_callbacks.load() == 2,
         "completed by kf_request_test alone: " + std::to_string(done) + " of 2, callbacks " +
             std::to_string(g_callbacks.load()) + (exact ? ", exact" : ", WRONG"));
  kf_request_free(r[0]);
  kf_request_free(r[1]);
}

void late(kf_comm_t comm, int rank, int n) {
  const bool last = rank == n - 1;
  int32_t v = 1, s = 0;
  kf_request_t r = nullptr;
  if (last) std::this_thread::sleep_for(std::chrono::milliseconds(4500));
  auto t0 = std::chrono::steady_clock::now();
  kf_iall_reduce(comm, "gone", &v, &s, 1, KF_INT32, KF_SUM, nullptr, &r);
  kf_status_t st = kf_request_wait(r);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::string text = kf_request_error(r);
  kf_request_free(r);
  if (!last) {
    report(
        st == KF_ERR_TIMEOUT && text.find("rank(s) " + std::to_string(n - 1) +
                                          " never submitted it") != std::string::npos,
        std::string("'gone' on a rank that submitted it: ") + kf_status_string(st) + ": " + text);
  } else {
    report(st == KF_ERR_TIMEOUT && secs < 1.5, std::string("'gone' submitted late: ") +
                                                   kf_status_string(st) + " after " +
                                                   std::to_string(secs) + " s: " + text);
  }
  int32_t one = 1, sum = 0;
  st = kf_iall_reduce(comm, "after", &one, &sum, 1, KF_INT32, KF_SUM, nullptr, &r);
  st = st == KF_SUCCESS ? kf_request_wait(r) : st;
  kf_request_free(r);
  report(st == KF_SUCCESS && sum == n, "the communicator works afterwards");
}

struct InCallback {
  kf_request_t pending = nullptr;  // "cb.later": the peers submit it after the callback
  kf_request_t done = nullptr;     // "cb.first": complete before
  bool armed = false;              // this rank's callback waits (rank 0)
  std::atomic<int> calls{0};
  kf_status_t wait = KF_SUCCESS, any = KF_SUCCESS, all = KF_SUCCESS, on_done = KF_ERR_INTERNAL,
              test = KF_SUCCESS;
};

void waits_inside(kf_request_t, kf_status_t, void* user) {
  auto* c = static_cast<InCallback*>(user);
  c->calls.fetch_add(1);
  if (!c->armed) return;
  c->wait = kf_request_wait(c->pending);
  size_t index = 0;
  c->any = kf_request_wait_any(1, &c->pending, &index);
  kf_request_t both[2] = {c->done, c->pending};
  c->all = kf_request_wait_all(2, both);
  c->on_done = kf_request_wait(c->done);
  c->test = kf_request_test(c->pending);
}

void in_callback(kf_comm_t comm, int rank, int n) {
  InCallback c;
  c.armed = rank == 0;
  int32_t first = rank + 1, trigger = rank + 1;
  std::vector<int32_t> later(100000);  // large: it needs every rank's driver
  for (size_t i = 0; i < later.size(); ++i) later[i] = value(rank, i);
  kf_iall_reduce(comm, "cb.first", &first, &first, 1, KF_INT32, KF_SUM, nullptr, &c.done);
  kf_status_t st = kf_request_wait(c.done);
  if (rank == 0) {
    kf_iall_reduce(comm, "cb.later", later.data(), later.data(), later.size(), KF_INT32, KF_SUM,
                   nullptr, &c.pending);
  }
  kf_op_options_t o = KF_OP_OPTIONS_INITIALIZER;
  o.callback = waits_inside;
  o.user_data = &c;
  kf_request_t t = nullptr;
  kf_iall_reduce(comm, "cb.trigger", &trigger, &trigger, 1, KF_INT32, KF_SUM, &o, &t);
  kf_status_t tst = kf_request_wait(t);
  const std::string error = kf_comm_last_error(comm);
  // Only now do the other ranks submit "cb.later": it was in progress on
  // rank 0 whatever the callback did.
  kf_barrier(comm);
  if (rank != 0) {
    kf_iall_reduce(comm, "cb.later", later.data(), later.data(), later.size(), KF_INT32, KF_SUM,
                   nullptr, &c.pending);
  }
  kf_status_t lst = kf_request_wait(c.pending);
  bool exact = first == n * (n + 1) / 2 && trigger == n * (n + 1) / 2;
  for (size_t i = 0; i < later.size(); ++i) {
    int64_t want = 0;
    for (int q = 0; q < n; ++q) want += value(q, i);
    if (later[i] != want) exact = false;
  }
  bool ok =
      st == KF_SUCCESS && tst == KF_SUCCESS && lst == KF_SUCCESS && exact && c.calls.load() == 1;
  if (rank == 0) {
    ok = ok && c.wait == KF_ERR_INVALID_USAGE && c.any == KF_ERR_INVALID_USAGE &&
         c.all == KF_ERR_INVALID_USAGE && c.on_done == KF_SUCCESS && c.test == KF_IN_PROGRESS &&
         error.find("completion callback") != std::string::npos;
  }
  report(ok, "waits inside a completion callback: wait " + std::to_string(c.wait) + ", any " +
                 std::to_string(c.any) + ", all " + std::to_string(c.all) + ", complete one " +
                 std::to_string(c.on_done) + ", test " + std::to_string(c.test) +
                 ", then the request " + std::to_string(lst) + (exact ? ", exact" : ", WRONG") +
                 (rank == 0 ? " (error: " + error + ")" : ""));
  kf_request_free(c.done);
  kf_request_free(c.pending);
  kf_request_free(t);
}

void edges(kf_comm_t comm, int rank, int n) {
  const int64_t offsets_ms[] = {-300, -80, -30, -10, 0, 10, 30, 100};
  constexpr int k = 8;
  const bool last = rank == n - 1;
  std::vector<int32_t> in(k), out(k, 0);
  for (int j = 0; j < k; ++j) in[j] = rank + 1 + j;
  std::vector<kf_request_t> reqs(k, nullptr);
  auto submit = [&](int j) {
    const std::string name = "edge." + std::to_string(j);
    kf_iall_reduce(comm, name.c_str(), &in[j], &out[j], 1, KF_INT32, KF_SUM, nullptr, &reqs[j]);
  };
  kf_barrier(comm);
  const auto t0 = std::chrono::steady_clock::now();
  if (!last) {
    for (int j = 0; j < k; ++j) submit(j);
    kf_request_wait_all(k, reqs.data());
  } else {
    for (int j = 0; j < k; ++j) {
      std::this_thread::sleep_until(t0 + std::chrono::milliseconds(3000 + offsets_ms[j]));
      submit(j);
      kf_request_wait(reqs[j]);  // (drives: the others' records of the next are read)
    }
  }
  // Every rank's status of each, compared by a blocking MIN and MAX.
  std::vector<int32_t> lo(k), hi(k);
  bool exact = true;
  for (int j = 0; j < k; ++j) {
    lo[j] = hi[j] = static_cast<int32_t>(kf_request_test(reqs[j]));
    if (lo[j] == KF_SUCCESS && out[j] != n * (n + 1) / 2 + n * j) exact = false;
    kf_request_free(reqs[j]);
  }
  kf_all_reduce(comm, lo.data(), lo.data(), k, KF_INT32, KF_MIN);
  kf_all_reduce(comm, hi.data(), hi.data(), k, KF_INT32, KF_MAX);
  bool agree = true;
  std::string seen;
  for (int j = 0; j < k; ++j) {
    agree = agree && lo[j] == hi[j];
    seen += " " + std::to_string(offsets_ms[j]) + "ms:" +
            (lo[j] == hi[j] ? kf_status_string(static_cast<kf_status_t>(lo[j])) : "DISAGREE");
  }
  const bool ends = lo[0] == KF_SUCCESS && hi[k - 1] == KF_ERR_TIMEOUT && lo[k - 1] == hi[k - 1];
  report(agree && ends && exact,
         std::string("tiny operations around their deadline:") + seen + (exact ? "" : ", WRONG"));
}

struct Chain {
  static constexpr int kOps = 2000;
  kf_comm_t comm = nullptr;
  int rank = 0;
  std::vector<int32_t> in, out;
  std::atomic<int> completed{0};
  std::atomic<int> failed{0};
  std::atomic<int> deepest{0};
  kf_status_t destroy = KF_SUCCESS;
  std::string destroy_error;
};
thread_local int t_chain_depth = 0;

void chain_submit(Chain* c, int i);

void chain_done(kf_request_t, kf_status_t st, void* user) {
  auto* c = static_cast<Chain*>(user);
  ++t_chain_depth;
  int seen = c->deepest.load();
  while (t_chain_depth > seen && !c->deepest.compare_exchange_weak(seen, t_chain_depth)) {
  }
  const int i = c->completed.fetch_add(1);  // in order: the next is submitted here
  if (st != KF_SUCCESS) c->failed.fetch_add(1);
  if (i == 0) {
    c->destroy = kf_comm_destroy(c->comm);  // refused: c->comm stays usable
    c->destroy_error = kf_comm_last_error(c->comm);
  }
  if (i + 1 < Chain::kOps) chain_submit(c, i + 1);
  --t_chain_depth;
}

void chain_submit(Chain* c, int i) {
  kf_op_options_t o = KF_OP_OPTIONS_INITIALIZER;
  o.callback = chain_done;
  o.user_data = c;
  if (kf_iall_reduce(c->comm, "chain", &c->in[i], &c->out[i], 1, KF_INT32, KF_SUM, &o, nullptr) !=
      KF_SUCCESS) {
    c->failed.fetch_add(1);
  }
}

void chained(kf_comm_t comm, int rank, int n) {
  Chain c;
  c.comm = comm;
  c.rank = rank;
  c.in.resize(Chain::kOps);
  c.out.assign(Chain::kOps, 0);
  for (int i = 0; i < Chain::kOps; ++i) c.in[i] = rank + 1 + i;
  kf_barrier(comm);
  chain_submit(&c, 0);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (c.completed.load() < Chain::kOps && c.failed.load() == 0 &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  bool exact = c.completed.load() == Chain::kOps;
  for (int i = 0; exact && i < Chain::kOps; ++i) exact = c.out[i] == n * (n + 1) / 2 + n * i;
  int32_t one = 1, sum = 0;
  const kf_status_t after = kf_all_reduce(comm, &one, &sum, 1, KF_INT32, KF_SUM);
  report(exact && c.failed.load() == 0 && c.deepest.load() == 1 &&
             c.destroy == KF_ERR_INVALID_USAGE &&
             c.destroy_error.find("completion callback") != std::string::npos &&
             after == KF_SUCCESS && sum == n,
         "callbacks that submit again: " + std::to_string(c.completed.load()) + " of " +
             std::to_string(Chain::kOps) + " completed" + (exact ? ", exact" : ", WRONG") +
             ", deepest nesting " + std::to_string(c.deepest.load()) + ", kf_comm_destroy inside " +
             std::to_string(c.destroy) + " (" + c.destroy_error +
             "), the communicator afterwards " + std::to_string(after));
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "--edges-mixed") {
    const char* r = std::getenv("KF_RANK");
    const char* s = std::getenv("KF_SIZE");
    if (r != nullptr && s != nullptr && std::atoi(r) == std::atoi(s) - 1) {
      setenv("KF_TIMEOUT_MS", "60000", 1);
    }
  }
  int n = 1;
  kf_comm_t comm = kfmp::init_or_die("mp_async_lane", &g_rank, &n);
  if (mode == "--late" || mode == "--edges-mixed") {
    if (mode == "--late") late(comm, g_rank, n);
    if (mode == "--edges-mixed") edges(comm, g_rank, n);
    kf_comm_destroy(comm);
    return g_fails == 0 ? 0 : 1;
  }
  sizes(comm, g_rank, n);
  beside_blocking(comm, g_rank, n);
  far_ahead(comm, g_rank, n);
  test_only(comm, g_rank, n);
  late(comm, g_rank, n);
  in_callback(comm, g_rank, n);
  edges(comm, g_rank, n);
  chained(comm, g_rank, n);
  kf_comm_destroy(comm);
  return g_fails == 0 ? 0 : 1;
}
