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
// Run with KF_TIMEOUT_MS=3000 (the timeouts of 5.).
#include <kungfu/async.h>
#include <kungfu/kungfu.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "mp_common.h"

namespace {

int g_fails = 0;
int g_rank = 0;

void report(bool ok, const std::string& what) {
  std::printf("%s rank %d: %s\n", ok ? "PASS" : "FAIL", g_rank, what.c_str());
  if (!ok) ++g_fails;
}

// Rank r contributes r + 1 + i at element i (of int32).
int32_t value(int r, size_t i) {
  return static_cast<int32_t>(r + 1 + static_cast<int>(i % 1000));
}

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

}  // namespace

int main() {
  int n = 1;
  kf_comm_t comm = kfmp::init_or_die("mp_async_lane", &g_rank, &n);
  sizes(comm, g_rank, n);
  beside_blocking(comm, g_rank, n);
  far_ahead(comm, g_rank, n);
  test_only(comm, g_rank, n);
  late(comm, g_rank, n);
  kf_comm_destroy(comm);
  return g_fails == 0 ? 0 : 1;
}
