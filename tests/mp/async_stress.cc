// Randomized stress test of the asynchronous engine: hundreds of named
// operations of every kind, submitted by several threads per rank in a
// different random order on every rank, with random priorities, partition
// sizes and (through KF_CREDIT_BYTES / KF_PARTITION_BYTES) a tiny credit
// window. Names are reused (per-name sequence numbers); every result is
// checked exactly (integers), every callback (half the operations have one)
// must fire exactly once, and test / wait / wait_any / wait_all are all
// exercised.
//
// Usage: mp_async_stress [--ops N] [--threads T] [--seed S] [--want-events]
// --want-events: fail unless some partitions ran as event partitions
// (sched/async_event.h: over TCP, the ring's partitions), so a test meant
// for that path cannot pass without it.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "api/handle.h"
#include "mp_common.h"

namespace {

enum Kind { kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter, kAllToAll, kGather,
            kScatter, kBarrier, kKinds };
const char* const kKindNames[] = {"all_reduce", "broadcast", "reduce", "all_gather",
                                  "reduce_scatter", "all_to_all", "gather", "scatter", "barrier"};

struct OpDesc {
  int id = 0;
  std::string name;
  Kind kind = kAllReduce;
  uint64_t count = 0;
  bool wide = false;  // int64 (else int32)
  kf_op_t op = KF_SUM;
  int root = 0;
  uint64_t partition_bytes = 0;
  bool in_place = false;
  // A completion callback: on half the operations (the scheduler treats an
  // operation with one differently: the thread that ends its last partition
  // hands what that admits to the pool instead of running it).
  bool callback = false;
};

// Input element j of op `id` on rank r.
int64_t value(int id, int r, uint64_t j) {
  return static_cast<int64_t>((uint64_t(id) * 131 + uint64_t(r) * 7919 + j * 17) % 1000) - 500;
}

int64_t combine(kf_op_t op, int64_t a, int64_t b) {
  switch (op) {
    case KF_MIN: return a < b ? a : b;
    case KF_MAX: return a > b ? a : b;
    default: return a + b;
  }
}

int64_t reduce_all(kf_op_t op, int id, int n, uint64_t j) {
  int64_t acc = value(id, 0, j);
  for (int r = 1; r < n; ++r) acc = combine(op, acc, value(id, r, j));
  return acc;
}

// One submitted operation and its buffers.
struct Live {
  OpDesc d;
  std::vector<int64_t> send, recv;  // as int64 storage; int32 ops use the first half of bytes
  kf_request_t req = nullptr;
  std::atomic<int> callbacks{0};
};


void put(Live& l, std::vector<int64_t>& buf, uint64_t i, int64_t v) {
  if (l.d.wide) {
    buf[i] = v;
  } else {
    reinterpret_cast<int32_t*>(buf.data())[i] = static_cast<int32_t>(v);
  }
}
int64_t get(const Live& l, const std::vector<int64_t>& buf, uint64_t i) {
  return l.d.wide ? buf[i] : reinterpret_cast<const int32_t*>(buf.data())[i];
}

bool blocked(Kind k) {
  return k == kAllGather || k == kReduceScatter || k == kAllToAll || k == kGather || k == kScatter;
}

void on_done(kf_request_t, kf_status_t, void* user) {
  static_cast<Live*>(user)->callbacks.fetch_add(1);
}

kf_status_t submit(kf_comm_t comm, Live& l, int rank, int n, int priority) {
  const OpDesc& d = l.d;
  const uint64_t c = d.count;
  const uint64_t all = c * uint64_t(n);
  // Buffers: send and recv sized for the kind, filled with inputs / 0x77.
  uint64_t send_elems = blocked(d.kind) && d.kind != kAllGather && d.kind != kGather ? all : c;
  uint64_t recv_elems = blocked(d.kind) && d.kind != kReduceScatter && d.kind != kScatter ? all : c;
  l.send.assign(send_elems + 1, 0);
  l.recv.assign(recv_elems + 1, 0x7777777777777777ll);
  for (uint64_t j = 0; j < send_elems; ++j) put(l, l.send, j, value(d.id, rank, j));
  if (d.in_place && (d.kind == kAllReduce || d.kind == kAllToAll)) l.recv = l.send;
  void* send = l.send.data();
  void* recv = d.in_place && (d.kind == kAllReduce || d.kind == kAllToAll) ? send : l.recv.data();
  kf_op_options_t o = KF_OP_OPTIONS_INITIALIZER;
  o.priority = priority;
  o.partition_bytes = d.partition_bytes;
  if (d.callback) {
    o.callback = on_done;
    o.user_data = &l;
  }
  const kf_dtype_t dt = d.wide ? KF_INT64 : KF_INT32;
  const char* nm = d.name.c_str();
  switch (d.kind) {
    case kAllReduce: return kf_iall_reduce(comm, nm, send, recv, c, dt, d.op, &o, &l.req);
    case kBroadcast: return kf_ibroadcast(comm, nm, send, recv, c, dt, d.root, &o, &l.req);
    case kReduce: return kf_ireduce(comm, nm, send, recv, c, dt, d.op, d.root, &o, &l.req);
    case kAllGather: return kf_iall_gather(comm, nm, send, recv, c, dt, &o, &l.req);
    case kReduceScatter: return kf_ireduce_scatter(comm, nm, send, recv, c, dt, d.op, &o, &l.req);
    case kAllToAll: return kf_iall_to_all(comm, nm, send, recv, c, dt, &o, &l.req);
    case kGather: return kf_igather(comm, nm, send, recv, c, dt, d.root, &o, &l.req);
    case kScatter: return kf_iscatter(comm, nm, send, recv, c, dt, d.root, &o, &l.req);
    default: return kf_ibarrier(comm, nm, &o, &l.req);
  }
}

// Number of wrong elements in a completed operation's result.
uint64_t check(const Live& l, int rank, int n) {
  const OpDesc& d = l.d;
  const uint64_t c = d.count;
  const bool ip = d.in_place && (d.kind == kAllReduce || d.kind == kAllToAll);
  const std::vector<int64_t>& out = ip ? l.send : l.recv;
  uint64_t wrong = 0;
  auto expect = [&](uint64_t i, int64_t v) {
    if (get(l, out, i) != v) ++wrong;
  };
  switch (d.kind) {
    case kAllReduce:
      for (uint64_t j = 0; j < c; ++j) expect(j, reduce_all(d.op, d.id, n, j));
      break;
    case kBroadcast:
      for (uint64_t j = 0; j < c; ++j) expect(j, value(d.id, d.root, j));
      break;
    case kReduce:
      if (rank == d.root) for (uint64_t j = 0; j < c; ++j) expect(j, reduce_all(d.op, d.id, n, j));
      break;
    case kAllGather:
      for (int b = 0; b < n; ++b)
        for (uint64_t j = 0; j < c; ++j) expect(uint64_t(b) * c + j, value(d.id, b, j));
      break;
    case kReduceScatter:
      for (uint64_t j = 0; j < c; ++j) {
        uint64_t at = uint64_t(rank) * c + j;
        expect(j, reduce_all(d.op, d.id, n, at));
      }
      break;
    case kAllToAll:
      for (int b = 0; b < n; ++b)
        for (uint64_t j = 0; j < c; ++j) expect(uint64_t(b) * c + j, value(d.id, b, uint64_t(rank) * c + j));
      break;
    case kGather:
      if (rank == d.root)
        for (int b = 0; b < n; ++b)
          for (uint64_t j = 0; j < c; ++j) expect(uint64_t(b) * c + j, value(d.id, b, j));
      break;
    case kScatter:
      for (uint64_t j = 0; j < c; ++j) expect(j, value(d.id, d.root, uint64_t(rank) * c + j));
      break;
    default:
      break;
  }
  return wrong;
}

}  // namespace

int main(int argc, char** argv) {
  int nops = 300, nthreads = 3;
  unsigned seed = 12345;
  bool want_events = false;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (!std::strcmp(argv[i], "--want-events")) {
      want_events = true;
    } else if (has_value && !std::strcmp(argv[i], "--ops")) {
      nops = std::atoi(argv[++i]);
    } else if (has_value && !std::strcmp(argv[i], "--threads")) {
      nthreads = std::atoi(argv[++i]);
    } else if (has_value && !std::strcmp(argv[i], "--seed")) {
      seed = static_cast<unsigned>(std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "mp_async_stress: unknown or incomplete argument %s\n", argv[i]);
      return 2;
    }
  }
  int rank = 0, n = 1;
  kf_comm_t comm = kfmp::init_or_die("mp_async_stress", &rank, &n);

  // The same operations on every rank (common seed)...
  std::mt19937 common(seed);
  const int nnames = std::max(8, nops / 4);  // names are reused about 4 times
  std::vector<OpDesc> ops(static_cast<size_t>(nops));
  for (int i = 0; i < nops; ++i) {
    OpDesc& d = ops[static_cast<size_t>(i)];
    d.id = i;
    d.name = "t" + std::to_string(i % nnames);
    d.kind = static_cast<Kind>(common() % kKinds);
    uint32_t sz = common() % 10;
    d.count = sz == 0 ? 0 : sz < 7 ? common() % 64 + 1 : common() % 5000 + 1;
    d.wide = common() % 2 == 0;
    static const kf_op_t kOps[] = {KF_SUM, KF_MIN, KF_MAX};
    d.op = kOps[common() % 3];
    d.root = static_cast<int>(common() % static_cast<unsigned>(n));
    uint32_t pb = common() % 4;
    d.partition_bytes = pb == 0 ? 0 : uint64_t(256) << (common() % 5);  // 256 B .. 4 KiB
    d.in_place = common() % 3 == 0;
    d.callback = common() % 2 == 0;
  }
  // ...but submitted in a different order on every rank: names are dealt to
  // threads (one name's operations stay in order on one thread, as the API
  // requires), and within each round of kRound operations every thread
  // interleaves its names randomly. A thread waits only after submitting its
  // whole round, so no rank can wait for an operation that another rank
  // holds back while waiting itself (an application-level deadlock that no
  // engine could avoid).
  const int kRound = 32;
  std::mt19937 local(seed * 7919u + static_cast<unsigned>(rank) * 104729u + 1);
  std::vector<std::vector<std::vector<int>>> plan(static_cast<size_t>(nthreads));  // [thread][round]
  for (int first = 0; first < nops; first += kRound) {
    for (int t = 0; t < nthreads; ++t) {
      std::vector<std::vector<int>> mine;  // per owned name, in id order
      for (int k = t; k < nnames; k += nthreads) {
        std::vector<int> ids;
        for (int i = first; i < std::min(nops, first + kRound); ++i) {
          if (i % nnames == k) ids.push_back(i);
        }
        if (!ids.empty()) mine.push_back(ids);
      }
      std::vector<int> round;
      while (!mine.empty()) {
        size_t pick = local() % mine.size();
        round.push_back(mine[pick].front());
        mine[pick].erase(mine[pick].begin());
        if (mine[pick].empty()) mine.erase(mine.begin() + static_cast<long>(pick));
      }
      plan[static_cast<size_t>(t)].push_back(round);
    }
  }

  std::vector<std::unique_ptr<Live>> lives(static_cast<size_t>(nops));
  for (int i = 0; i < nops; ++i) {
    lives[static_cast<size_t>(i)].reset(new Live());
    lives[static_cast<size_t>(i)]->d = ops[static_cast<size_t>(i)];
  }
  std::atomic<uint64_t> failures{0}, wrong{0};
  std::mutex print_mu;
  auto complain = [&](const std::string& s) {
    std::lock_guard<std::mutex> lock(print_mu);
    std::printf("FAIL rank %d: %s\n", rank, s.c_str());
    failures.fetch_add(1);
  };
  auto finish = [&](Live& l, kf_status_t st) {
    if (st != KF_SUCCESS) {
      complain("op " + std::to_string(l.d.id) + " '" + l.d.name + "' (" + kKindNames[l.d.kind] +
               ", count " + std::to_string(l.d.count) + ") -> " + kf_status_string(st) + ": " +
               kf_request_error(l.req));
    } else {
      uint64_t w = check(l, rank, n);
      if (w != 0) {
        wrong.fetch_add(w);
        complain("op " + std::to_string(l.d.id) + " (" + kKindNames[l.d.kind] + ", count " +
                 std::to_string(l.d.count) + ", partition " + std::to_string(l.d.partition_bytes) +
                 "): " + std::to_string(w) + " wrong elements");
      }
    }
    if (l.callbacks.load() != (l.d.callback ? 1 : 0)) {
      complain("op " + std::to_string(l.d.id) + ": callback fired " +
               std::to_string(l.callbacks.load()) + " times");
    }
    if (kf_request_free(l.req) != KF_SUCCESS) complain("kf_request_free failed");
    l.req = nullptr;
    l.send.clear();
    l.send.shrink_to_fit();
    l.recv.clear();
    l.recv.shrink_to_fit();
  };

  std::vector<unsigned> thread_seeds;
  for (int t = 0; t < nthreads; ++t) thread_seeds.push_back(local() + static_cast<unsigned>(t));
  auto worker = [&](int t) {
    std::mt19937 rng(thread_seeds[static_cast<size_t>(t)]);
    std::vector<Live*> outstanding;
    for (const std::vector<int>& round : plan[static_cast<size_t>(t)]) {
      for (int id : round) {
        Live& l = *lives[static_cast<size_t>(id)];
        int priority = static_cast<int>(rng() % 20) - 5;
        kf_status_t st = submit(comm, l, rank, n, priority);
        if (st != KF_SUCCESS) {
          complain("submit of op " + std::to_string(id) + " -> " + kf_status_string(st) + ": " +
                   kf_comm_last_error(comm));
          continue;
        }
        outstanding.push_back(&l);
      }
      // Complete some: by wait_any, wait_all, or test + wait.
      size_t keep = rng() % 24;
      while (outstanding.size() > keep) {
        switch (rng() % 3) {
          case 0: {
            std::vector<kf_request_t> reqs;
            for (Live* o : outstanding) reqs.push_back(o->req);
            size_t index = 0;
            kf_status_t s = kf_request_wait_any(reqs.size(), reqs.data(), &index);
            Live* done = outstanding[index];
            if (kf_request_test(done->req) == KF_IN_PROGRESS) complain("wait_any returned a running request");
            outstanding.erase(outstanding.begin() + static_cast<long>(index));
            finish(*done, s);
            break;
          }
          case 1: {
            size_t k = std::min<size_t>(outstanding.size(), 1 + rng() % 4);
            std::vector<kf_request_t> reqs;
            for (size_t i = 0; i < k; ++i) reqs.push_back(outstanding[i]->req);
            kf_request_wait_all(reqs.size(), reqs.data());
            for (size_t i = 0; i < k; ++i) finish(*outstanding[i], kf_request_test(outstanding[i]->req));
            outstanding.erase(outstanding.begin(), outstanding.begin() + static_cast<long>(k));
            break;
          }
          default: {
            Live* o = outstanding.back();
            outstanding.pop_back();
            kf_request_test(o->req);
            finish(*o, kf_request_wait(o->req));
            break;
          }
        }
      }
    }
    for (Live* o : outstanding) finish(*o, kf_request_wait(o->req));
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < nthreads; ++t) threads.emplace_back(worker, t);
  for (auto& th : threads) th.join();

  // The communicator still works for blocking calls afterwards.
  int32_t one = 1, sum = 0;
  kf_status_t st = kf_all_reduce(comm, &one, &sum, 1, KF_INT32, KF_SUM);
  if (st != KF_SUCCESS || sum != n) complain("final blocking all_reduce");
  const uint64_t events = comm->impl->async().events_started();
  if (want_events && events == 0) complain("no partition ran as an event partition");
  bool ok = failures.load() == 0;
  std::printf("%s rank %d: %d async ops by %d threads, %llu wrong elements, %llu event partitions\n",
              ok ? "PASS" : "FAIL", rank, nops, nthreads,
              static_cast<unsigned long long>(wrong.load()), static_cast<unsigned long long>(events));
  kf_comm_destroy(comm);
  return ok ? 0 : 1;
}
