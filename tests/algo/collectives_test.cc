// Every collective x dtype x op x rank count x size x algorithm x in-place
// mode, run over in-process thread peers and checked against a reference.
#include "algo/collectives.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "algo/internal.h"
#include "algo/one_shot.h"
#include "algo/ring_task.h"
#include "algo/sub_peers.h"
#include "test_data.h"
#include "thread_peers.h"

namespace kf {
namespace test {
namespace {

using Bytes = std::vector<char>;

const kf_dtype_t kDtypes[] = {KF_INT8,   KF_UINT8,   KF_INT32,    KF_UINT32,  KF_INT64,
                              KF_UINT64, KF_FLOAT16, KF_BFLOAT16, KF_FLOAT32, KF_FLOAT64};
const kf_op_t kOps[] = {KF_SUM, KF_PROD, KF_MIN, KF_MAX, KF_AVG};

// Sizes: empty, one element, fewer elements than ranks, an odd ~1000 in one
// chunk, and the same cut into many chunks by a chunk size that is not a
// multiple of every element size.
struct Shape {
  size_t count;
  size_t chunk_bytes;
};
const Shape kShapes[] = {{0, 64}, {1, 64}, {5, 64}, {1031, 1 << 20}, {1031, 60}};

struct Variant {
  Algorithm algo;
  size_t threshold;
  const char* name;
};
const Variant kVariants[] = {{Algorithm::kRing, 0, "ring"},
                             {Algorithm::kRecursiveDoubling, 0, "rd"},
                             {Algorithm::kAuto, 512, "auto"}};

struct Case {
  kf_dtype_t t = KF_INT32;
  kf_op_t op = KF_SUM;
  Shape shape{};
  Variant variant{};
  bool inplace = false;
  int root = 0;

  AlgoOptions options() const {
    AlgoOptions o;
    o.algorithm = variant.algo;
    o.ring_threshold_bytes = variant.threshold;
    o.chunk_bytes = shape.chunk_bytes;
    return o;
  }
  std::string text(int n) const {
    return std::string("np=") + std::to_string(n) + " " + dtype_name(t) + " " + op_name(op) +
           " count=" + std::to_string(shape.count) +
           " chunk_bytes=" + std::to_string(shape.chunk_bytes) + " " + variant.name +
           (inplace ? " in-place" : " out-of-place") + " root=" + std::to_string(root);
  }
};

// Fills `count` elements of rank's input starting at element `first`.
Bytes make_input(const Case& c, int rank, size_t count, size_t first = 0) {
  Bytes b(count * esize(c.t) + 1);  // +1: never a zero-sized buffer
  for (size_t i = 0; i < count; ++i) set(c.t, b.data(), i, input_value(c.t, c.op, rank, first + i));
  return b;
}

// Reference reduction of element idx over all ranks (inputs offset by `first`).
Value expected_reduce(const Case& c, int n, size_t idx) {
  Value acc = input_value(c.t, c.op, 0, idx);
  for (int r = 1; r < n; ++r) acc = ref_combine(c.t, c.op, acc, input_value(c.t, c.op, r, idx));
  if (c.op == KF_AVG) acc = ref_average(c.t, acc, n);
  return acc;
}

// Compares count elements of `got` with want(i); records the first mismatch.
template <class Want>
bool check(const Case& c, int n, int rank, const char* what, const void* got, size_t count,
           Want want) {
  for (size_t i = 0; i < count; ++i) {
    const Value g = get(c.t, got, i);
    const Value w = want(i);
    if (!same(c.t, g, w, c.op == KF_AVG && is_float(c.t))) {
      ADD_FAILURE() << c.text(n) << ": rank " << rank << " " << what << "[" << i
                    << "] = " << value_text(c.t, g) << ", want " << value_text(c.t, w);
      return false;
    }
  }
  return true;
}

// Runs fn on n thread ranks and checks statuses and protocol hygiene.
bool run_world(const Case& c, int n, const std::function<Status(Peers&)>& fn) {
  ThreadWorld w(n);
  const std::vector<Status> st = w.run(fn);
  bool ok = true;
  for (int r = 0; r < n; ++r) {
    if (!st[static_cast<size_t>(r)].is_ok()) {
      ADD_FAILURE() << c.text(n) << ": rank " << r << " failed: " << st[r].message();
      ok = false;
    }
  }
  for (const std::string& p : w.problems()) {
    ADD_FAILURE() << c.text(n) << ": " << p;
    ok = false;
  }
  return ok;
}

bool inputs_unchanged(const Case& c, int n, int rank, const Bytes& now, size_t count,
                      size_t first = 0) {
  return check(c, n, rank, "send (must stay unchanged)", now.data(), count,
               [&](size_t i) { return input_value(c.t, c.op, rank, first + i); });
}

class AlgoTest : public ::testing::TestWithParam<int> {
 protected:
  int n() const { return GetParam(); }

  // Calls body(case) for every combination; stops at the first failing one
  // so that a bug reports one case, not thousands.
  template <class Body>
  void for_all(bool with_ops, bool with_variants, bool with_roots, Body body) {
    for (kf_dtype_t t : kDtypes) {
      for (kf_op_t op : kOps) {
        if (!with_ops && op != KF_SUM) continue;
        for (const Shape& s : kShapes) {
          for (const Variant& v : kVariants) {
            if (!with_variants && v.algo != Algorithm::kRing) continue;
            for (int inplace = 0; inplace < 2; ++inplace) {
              Case c;
              c.t = t;
              c.op = op;
              c.shape = s;
              c.variant = v;
              c.inplace = inplace != 0;
              // Rotate the root through 0, the last rank and a middle one.
              c.root = with_roots ? static_cast<int>((s.count + inplace) % 3) * (n() - 1) / 2 : 0;
              body(c);
              if (HasFailure()) return;
            }
          }
        }
      }
    }
  }
};

// Checks an all_reduce algorithm: results, unchanged inputs, and the same
// bits on every rank.
using AllReduceFn = std::function<Status(Peers&, const Case&, const void*, void*, size_t)>;
void check_all_reduce(int n, const Case& c, const AllReduceFn& run) {
  const size_t count = c.shape.count;
  std::vector<Bytes> in(n), out(n);
  for (int r = 0; r < n; ++r) {
    in[r] = make_input(c, r, count);
    out[r].assign(in[r].size(), 0x5a);
  }
  const bool ran = run_world(c, n, [&](Peers& p) {
    const int r = p.rank();
    void* recv = c.inplace ? in[r].data() : out[r].data();
    return run(p, c, in[r].data(), recv, count);
  });
  if (!ran) return;
  for (int r = 0; r < n; ++r) {
    const Bytes& res = c.inplace ? in[r] : out[r];
    if (!check(c, n, r, "recv", res.data(), count,
               [&](size_t i) { return expected_reduce(c, n, i); }))
      return;
    if (!c.inplace && !inputs_unchanged(c, n, r, in[r], count)) return;
    // Every rank must hold the very same bits, KF_AVG included.
    const Bytes& first = c.inplace ? in[0] : out[0];
    if (std::memcmp(res.data(), first.data(), count * esize(c.t)) != 0) {
      ADD_FAILURE() << c.text(n) << ": rank " << r << " differs bitwise from rank 0";
      return;
    }
  }
}

TEST_P(AlgoTest, AllReduce) {
  for_all(true, true, false, [&](const Case& c) {
    check_all_reduce(n(), c,
                     [](Peers& p, const Case& k, const void* send, void* recv, size_t count) {
                       return all_reduce(p, k.options(), send, recv, count, k.t, k.op);
                     });
  });
}

// The one-shot algorithm of fused asynchronous all_reduces (algo/one_shot.h).
TEST_P(AlgoTest, OneShotAllReduce) {
  for_all(true, false, false, [&](const Case& c) {
    check_all_reduce(n(), c,
                     [](Peers& p, const Case& k, const void* send, void* recv, size_t count) {
                       return one_shot_all_reduce(p, send, recv, count, k.t, k.op);
                     });
  });
}

// Drives RingTasks by advance() alone until every one is done, round robin
// on the calling thread (as the asynchronous engine's event partitions run,
// which start with gather_now false).
Status advance_all(std::vector<std::unique_ptr<RingTask>>& tasks, bool gather_now = true) {
  for (auto& t : tasks) t->start(gather_now);
  std::vector<bool> done(tasks.size(), false);
  for (size_t left = tasks.size(); left > 0;) {
    for (size_t i = 0; i < tasks.size(); ++i) {
      if (done[i]) continue;
      bool d = false;
      KF_RETURN_IF_ERROR(tasks[i]->advance(&d));
      if (d) {
        done[i] = true;
        --left;
      }
    }
    std::this_thread::yield();
  }
  return Status::ok();
}

// RingTask::advance: three rings over thirds of the buffer, each in a phase
// of its own, advanced together by one thread per rank; every op, KF_AVG
// averaged by the owner of each segment (the same bits on every rank).
TEST_P(AlgoTest, RingTaskAdvance) {
  for_all(true, false, false, [&](const Case& c) {
    check_all_reduce(n(), c,
                     [](Peers& p, const Case& k, const void* send, void* recv, size_t count) {
                       const size_t es = esize(k.t);
                       std::vector<int> all(static_cast<size_t>(p.size()));
                       for (int r = 0; r < p.size(); ++r) all[static_cast<size_t>(r)] = r;
                       std::vector<std::unique_ptr<SubPeers>> views;
                       std::vector<std::unique_ptr<RingTask>> tasks;
                       for (size_t s = 0; s < 3; ++s) {
                         const Range part = balanced_piece(count, 3, s);
                         views.push_back(std::make_unique<SubPeers>(p, all, uint32_t(s + 1)));
                         tasks.push_back(std::make_unique<RingTask>(
                             *views.back(), static_cast<char*>(recv) + part.begin * es, part.len,
                             k.t, k.op));
                         if (send != recv) {
                           tasks.back()->read_input_from(static_cast<const char*>(send) +
                                                         part.begin * es);
                         }
                       }
                       return advance_all(tasks, /*gather_now=*/false);
                     });
  });
}

// A RingTask cut into the blocking ring's chunks sends that ring's messages:
// ranks that run one meet ranks that run ring_all_reduce (the engine's
// event partitions and its threads need not agree), with the same bits, at
// every shape (one chunk per segment or several).
TEST_P(AlgoTest, RingTaskMeetsTheBlockingRing) {
  for_all(true, false, false, [&](const Case& c) {
    check_all_reduce(n(), c,
                     [](Peers& p, const Case& k, const void* send, void* recv, size_t count) {
                       if (p.rank() % 2 == 0) {
                         return all_reduce(p, k.options(), send, recv, count, k.t, k.op);
                       }
                       std::vector<std::unique_ptr<RingTask>> one;
                       one.push_back(std::make_unique<RingTask>(
                           p, recv, count, k.t, k.op, chunk_elems(k.options(), esize(k.t))));
                       if (send != recv) one.back()->read_input_from(send);
                       // Ranks 1, 5, ... start as the engine does (the
                       // all-gather's receives once the sends are done),
                       // ranks 3, 7, ... with every receive at once.
                       return advance_all(one, /*gather_now=*/p.rank() % 4 == 3);
                     });
  });
}

TEST_P(AlgoTest, Reduce) {
  const int n = this->n();
  for_all(true, true, true, [&](const Case& c) {
    const size_t count = c.shape.count;
    std::vector<Bytes> in(n);
    Bytes out(count * esize(c.t) + 1, 0x5a);
    for (int r = 0; r < n; ++r) in[r] = make_input(c, r, count);
    const bool ran = run_world(c, n, [&](Peers& p) {
      const int r = p.rank();
      // Off root the result buffer is ignored: pass the send buffer (as an
      // in-place caller would) or nullptr.
      void* recv = c.inplace ? in[r].data() : (r == c.root ? out.data() : nullptr);
      return reduce(p, c.options(), in[r].data(), recv, count, c.t, c.op, c.root);
    });
    if (!ran) return;
    const Bytes& res = c.inplace ? in[c.root] : out;
    if (!check(c, n, c.root, "recv", res.data(), count,
               [&](size_t i) { return expected_reduce(c, n, i); }))
      return;
    for (int r = 0; r < n; ++r) {
      if (c.inplace && r == c.root) continue;
      if (!inputs_unchanged(c, n, r, in[r], count)) return;
    }
  });
}

TEST_P(AlgoTest, ReduceScatter) {
  const int n = this->n();
  for_all(true, false, false, [&](const Case& c) {
    const size_t count = c.shape.count;  // per rank
    const size_t total = count * static_cast<size_t>(n);
    std::vector<Bytes> in(n), out(n);
    for (int r = 0; r < n; ++r) {
      in[r] = make_input(c, r, total);
      out[r].assign(count * esize(c.t) + 1, 0x5a);
    }
    const bool ran = run_world(c, n, [&](Peers& p) {
      const int r = p.rank();
      void* recv =
          c.inplace ? in[r].data() + static_cast<size_t>(r) * count * esize(c.t) : out[r].data();
      return reduce_scatter(p, c.options(), in[r].data(), recv, count, c.t, c.op);
    });
    if (!ran) return;
    for (int r = 0; r < n; ++r) {
      const size_t first = static_cast<size_t>(r) * count;
      const char* res = c.inplace ? in[r].data() + first * esize(c.t) : out[r].data();
      if (!check(c, n, r, "recv", res, count,
                 [&](size_t i) { return expected_reduce(c, n, first + i); }))
        return;
      if (!c.inplace && !inputs_unchanged(c, n, r, in[r], total)) return;
      if (c.inplace) {
        // Only block r is the result; the other blocks are still input.
        for (int b = 0; b < n; ++b) {
          if (b == r) continue;
          const size_t off = static_cast<size_t>(b) * count;
          Bytes blk(in[r].begin() + static_cast<long>(off * esize(c.t)),
                    in[r].begin() + static_cast<long>((off + count) * esize(c.t)));
          if (!inputs_unchanged(c, n, r, blk, count, off)) return;
        }
      }
    }
  });
}

TEST_P(AlgoTest, AllGather) {
  const int n = this->n();
  for_all(false, false, false, [&](const Case& c) {
    const size_t count = c.shape.count;
    const size_t total = count * static_cast<size_t>(n);
    std::vector<Bytes> in(n), out(n);
    for (int r = 0; r < n; ++r) {
      in[r] = make_input(c, r, count, static_cast<size_t>(r) * count);
      out[r].assign(total * esize(c.t) + 1, 0x5a);
      if (c.inplace) {
        std::memcpy(out[r].data() + static_cast<size_t>(r) * count * esize(c.t), in[r].data(),
                    count * esize(c.t));
      }
    }
    const bool ran = run_world(c, n, [&](Peers& p) {
      const int r = p.rank();
      const void* send =
          c.inplace ? out[r].data() + static_cast<size_t>(r) * count * esize(c.t) : in[r].data();
      return all_gather(p, c.options(), send, out[r].data(), count, c.t);
    });
    if (!ran) return;
    for (int r = 0; r < n; ++r) {
      if (!check(c, n, r, "recv", out[r].data(), total,
                 [&](size_t i) { return input_value(c.t, c.op, static_cast<int>(i / count), i); }))
        return;
    }
  });
}

TEST_P(AlgoTest, Broadcast) {
  const int n = this->n();
  for_all(false, true, true, [&](const Case& c) {
    const size_t count = c.shape.count;
    const Bytes in = make_input(c, c.root, count);
    std::vector<Bytes> out(n);
    for (int r = 0; r < n; ++r) out[r].assign(in.size(), 0x5a);
    if (c.inplace) out[c.root] = in;
    const bool ran = run_world(c, n, [&](Peers& p) {
      const int r = p.rank();
      const void* send = r != c.root ? nullptr : c.inplace ? out[r].data() : in.data();
      return broadcast(p, c.options(), send, out[r].data(), count, c.t, c.root);
    });
    if (!ran) return;
    for (int r = 0; r < n; ++r) {
      if (!check(c, n, r, "recv", out[r].data(), count,
                 [&](size_t i) { return input_value(c.t, c.op, c.root, i); }))
        return;
    }
  });
}

TEST_P(AlgoTest, AllToAll) {
  const int n = this->n();
  for_all(false, false, false, [&](const Case& c) {
    const size_t count = c.shape.count;
    const size_t total = count * static_cast<size_t>(n);
    std::vector<Bytes> in(n), out(n);
    for (int r = 0; r < n; ++r) {
      in[r] = make_input(c, r, total);
      out[r].assign(in[r].size(), 0x5a);
    }
    const bool ran = run_world(c, n, [&](Peers& p) {
      const int r = p.rank();
      void* recv = c.inplace ? in[r].data() : out[r].data();
      return all_to_all(p, c.options(), in[r].data(), recv, count, c.t);
    });
    if (!ran) return;
    for (int r = 0; r < n; ++r) {
      // Block j of rank r's result is block r of rank j's input.
      const Bytes& res = c.inplace ? in[r] : out[r];
      if (!check(c, n, r, "recv", res.data(), total, [&](size_t i) {
            const int j = static_cast<int>(i / count);
            return input_value(c.t, c.op, j, static_cast<size_t>(r) * count + i % count);
          }))
        return;
      if (!c.inplace && !inputs_unchanged(c, n, r, in[r], total)) return;
    }
  });
}

TEST_P(AlgoTest, Gather) {
  const int n = this->n();
  for_all(false, false, true, [&](const Case& c) {
    const size_t count = c.shape.count;
    const size_t total = count * static_cast<size_t>(n);
    const size_t es = esize(c.t);
    std::vector<Bytes> in(n);
    Bytes out(total * es + 1, 0x5a);
    for (int r = 0; r < n; ++r) in[r] = make_input(c, r, count, static_cast<size_t>(r) * count);
    if (c.inplace) std::memcpy(out.data() + c.root * count * es, in[c.root].data(), count * es);
    const bool ran = run_world(c, n, [&](Peers& p) {
      const int r = p.rank();
      const void* send = r == c.root && c.inplace ? out.data() + r * count * es : in[r].data();
      void* recv = r == c.root ? out.data() : nullptr;
      return gather(p, c.options(), send, recv, count, c.t, c.root);
    });
    if (!ran) return;
    check(c, n, c.root, "recv", out.data(), total,
          [&](size_t i) { return input_value(c.t, c.op, static_cast<int>(i / count), i); });
  });
}

TEST_P(AlgoTest, Scatter) {
  const int n = this->n();
  for_all(false, false, true, [&](const Case& c) {
    const size_t count = c.shape.count;
    const size_t total = count * static_cast<size_t>(n);
    const size_t es = esize(c.t);
    Bytes in = make_input(c, c.root, total);
    std::vector<Bytes> out(n);
    for (int r = 0; r < n; ++r) out[r].assign(count * es + 1, 0x5a);
    const bool ran = run_world(c, n, [&](Peers& p) {
      const int r = p.rank();
      const void* send = r == c.root ? in.data() : nullptr;
      void* recv = r == c.root && c.inplace ? in.data() + r * count * es : out[r].data();
      return scatter(p, c.options(), send, recv, count, c.t, c.root);
    });
    if (!ran) return;
    for (int r = 0; r < n; ++r) {
      const char* res = r == c.root && c.inplace ? in.data() + r * count * es : out[r].data();
      if (!check(c, n, r, "recv", res, count, [&](size_t i) {
            return input_value(c.t, c.op, c.root, static_cast<size_t>(r) * count + i);
          }))
        return;
    }
  });
}

TEST_P(AlgoTest, Barrier) {
  const int n = this->n();
  Case c;
  for (int round = 0; round < 5; ++round) {
    std::atomic<int> entered{0};
    std::atomic<bool> early{false};
    run_world(c, n, [&](Peers& p) {
      // Arrive at different times so that a broken barrier lets someone out early.
      std::this_thread::sleep_for(std::chrono::milliseconds((p.rank() * 7 + round * 3) % 11));
      entered.fetch_add(1);
      Status st = barrier(p, AlgoOptions{});
      if (entered.load() != n) early = true;
      return st;
    });
    EXPECT_FALSE(early.load()) << "np=" << n << ": a rank left the barrier early";
  }
}

// Larger buffers with the default options (kAuto picks the ring) and with
// small chunks (deep pipelines, far more chunks than the receive window).
TEST_P(AlgoTest, LargeMessagesUseThePipeline) {
  const int n = this->n();
  for (size_t chunk_bytes : {size_t{1} << 20, size_t{4096} + 4}) {
    Case c;
    c.t = KF_FLOAT32;
    c.op = KF_SUM;
    c.shape = Shape{100003, chunk_bytes};
    c.variant = Variant{Algorithm::kAuto, AlgoOptions{}.ring_threshold_bytes, "auto-default"};
    for (int inplace = 0; inplace < 2; ++inplace) {
      c.inplace = inplace != 0;
      const size_t count = c.shape.count;
      std::vector<Bytes> in(n), out(n);
      for (int r = 0; r < n; ++r) {
        in[r] = make_input(c, r, count);
        out[r].assign(in[r].size(), 0);
      }
      ASSERT_TRUE(run_world(c, n, [&](Peers& p) {
        const int r = p.rank();
        void* recv = c.inplace ? in[r].data() : out[r].data();
        return all_reduce(p, c.options(), in[r].data(), recv, count, c.t, c.op);
      }));
      for (int r = 0; r < n; ++r) {
        ASSERT_TRUE(check(c, n, r, "recv", (c.inplace ? in[r] : out[r]).data(), count,
                          [&](size_t i) { return expected_reduce(c, n, i); }));
      }
      // The same data through reduce (ring reduce-scatter + gather) to the last rank.
      for (int r = 0; r < n; ++r) in[r] = make_input(c, r, count);
      c.root = n - 1;
      Bytes res(in[0].size(), 0);
      ASSERT_TRUE(run_world(c, n, [&](Peers& p) {
        const int r = p.rank();
        return reduce(p, c.options(), in[r].data(), r == c.root ? res.data() : nullptr, count, c.t,
                      c.op, c.root);
      }));
      ASSERT_TRUE(check(c, n, c.root, "recv", res.data(), count,
                        [&](size_t i) { return expected_reduce(c, n, i); }));
      // And broadcast (pipelined chain) of the root's input.
      std::vector<Bytes> bc(n, Bytes(in[0].size(), 0));
      ASSERT_TRUE(run_world(c, n, [&](Peers& p) {
        const int r = p.rank();
        return broadcast(p, c.options(), r == c.root ? in[r].data() : nullptr, bc[r].data(), count,
                         c.t, c.root);
      }));
      for (int r = 0; r < n; ++r) {
        ASSERT_TRUE(check(c, n, r, "recv", bc[r].data(), count,
                          [&](size_t i) { return input_value(c.t, c.op, c.root, i); }));
      }
    }
  }
}

// Errors from wait() must come back promptly, not hang or crash: rank 0 sees
// a failure on its second wait and the others time out on the missing data.
class FailingPeers final : public Peers {
 public:
  // `on_fail` withdraws this rank's pending transfers, as a real Peers does
  // before returning an error (the algorithm then frees its scratch).
  FailingPeers(Peers& inner, int fail_at, std::function<void()> on_fail)
      : inner_(inner), fail_at_(fail_at), on_fail_(std::move(on_fail)) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  TransferHandle isend(int peer, Tag tag, const void* buf, size_t len) override {
    return inner_.isend(peer, tag, buf, len);
  }
  TransferHandle irecv(int peer, Tag tag, void* buf, size_t len) override {
    return inner_.irecv(peer, tag, buf, len);
  }
  Status wait(const TransferHandle& t) override {
    if (++waits_ == fail_at_) {
      on_fail_();
      return remote_error("injected peer failure");
    }
    return inner_.wait(t);
  }
  bool test(const TransferHandle& t, Status* st) override { return inner_.test(t, st); }

 private:
  Peers& inner_;
  int fail_at_;
  std::function<void()> on_fail_;
  int waits_ = 0;
};

TEST_P(AlgoTest, ErrorsPropagate) {
  const int n = this->n();
  if (n == 1) GTEST_SKIP() << "one rank never waits";
  for (Algorithm a : {Algorithm::kRing, Algorithm::kRecursiveDoubling}) {
    AlgoOptions o;
    o.algorithm = a;
    o.chunk_bytes = 16;
    ThreadWorld w(n, /*timeout_ms=*/300);
    std::vector<std::vector<float>> bufs(n, std::vector<float>(257, 1.0f));
    const std::vector<Status> st = w.run([&](Peers& p) {
      if (p.rank() != 0)
        return all_reduce(p, o, bufs[p.rank()].data(), bufs[p.rank()].data(), 257, KF_FLOAT32,
                          KF_SUM);
      FailingPeers f(p, 2, [&w] { w.cancel(0); });
      return all_reduce(f, o, bufs[0].data(), bufs[0].data(), 257, KF_FLOAT32, KF_SUM);
    });
    EXPECT_EQ(st[0].code(), KF_ERR_REMOTE);
  }
}

INSTANTIATE_TEST_SUITE_P(Np, AlgoTest, ::testing::Values(1, 2, 3, 4, 5, 7, 8),
                         [](const ::testing::TestParamInfo<int>& param) {
                           return "np" + std::to_string(param.param);
                         });

// The chunk count of a balanced layout, computed without the layout (the
// async engine asks it per partition), is the layout's.
TEST(LayoutTest, BalancedChunksWithoutTheLayout) {
  for (int n = 1; n <= 9; ++n) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{64}, size_t{1000}, size_t{4097},
                         size_t{1} << 20}) {
      for (size_t chunk : {size_t{1}, size_t{3}, size_t{64}, size_t{1} << 18}) {
        EXPECT_EQ(Layout::balanced_chunks(count, n, chunk),
                  Layout::balanced(count, n, chunk).chunks())
            << "n " << n << " count " << count << " chunk " << chunk;
      }
    }
  }
}

}  // namespace
}  // namespace test
}  // namespace kf
