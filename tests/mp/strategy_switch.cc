// Run-time strategy switching (kf_comm_set_strategy), on real ranks:
//  - every few steps all ranks switch to the next strategy (flat, hier,
//    tree, multi-tree, auto, ...); all_reduce (int64 sum, float32 avg of
//    small integers, int32 max), broadcast and all_gather results are
//    checked exactly at sizes from 1 element to beyond one hierarchical
//    slice, with a small KF_HIER_SLICE_BYTES when the test sets it;
//  - kf_comm_get_strategy reports the value set;
//  - a mismatched switch (rank 0 asks for something else) fails with
//    KF_ERR_INVALID_USAGE on every rank and keeps the old strategy, and the
//    communicator still works afterwards;
//  - an invalid value fails with KF_ERR_INVALID_ARGUMENT on the rank that
//    passed it and KF_ERR_INVALID_USAGE on the others;
//  - a split communicator inherits the strategy and runs them all.
// Prints "PASS strategy_switch rank R: N checks" and exits 0, or FAIL lines.
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "mp_common.h"

namespace {

int g_rank = 0, g_size = 1;
long g_checks = 0, g_failures = 0;

void expect(bool ok, const std::string& what) {
  ++g_checks;
  if (ok) return;
  ++g_failures;
  if (g_failures <= 20) std::printf("FAIL rank %d: %s\n", g_rank, what.c_str());
}

std::string status_text(kf_comm_t comm, kf_status_t st) {
  return std::string(kf_status_string(st)) +
         (st == KF_SUCCESS ? "" : std::string(": ") + kf_comm_last_error(comm));
}

// One round of collectives of `count` elements at step `step`.
void round_of_collectives(kf_comm_t comm, uint64_t count, int step, const char* strat) {
  const std::string where = std::string(" (strategy ") + strat + ", count " +
                            std::to_string(count) + ", step " + std::to_string(step) + ")";
  // int64 sum: exact.
  std::vector<int64_t> a(count), b(count);
  for (uint64_t i = 0; i < count; ++i) a[i] = int64_t(g_rank) * 1000003 + int64_t(i) * 7 + step;
  kf_status_t st = kf_all_reduce(comm, a.data(), b.data(), count, KF_INT64, KF_SUM);
  expect(st == KF_SUCCESS, "all_reduce int64 sum -> " + status_text(comm, st) + where);
  const int64_t rank_sum = int64_t(g_size) * (g_size - 1) / 2;
  uint64_t wrong = 0;
  for (uint64_t i = 0; i < count; ++i) {
    if (b[i] != rank_sum * 1000003 + (int64_t(i) * 7 + step) * g_size) ++wrong;
  }
  expect(wrong == 0, "all_reduce int64 sum: " + std::to_string(wrong) + " wrong" + where);

  // float32 avg of small integers, in place: exact (sums stay below 2^24).
  std::vector<float> f(count);
  for (uint64_t i = 0; i < count; ++i) f[i] = float((i % 97) * g_size + uint64_t(g_rank) * 2);
  st = kf_all_reduce(comm, f.data(), f.data(), count, KF_FLOAT32, KF_AVG);
  expect(st == KF_SUCCESS, "all_reduce float32 avg -> " + status_text(comm, st) + where);
  wrong = 0;
  for (uint64_t i = 0; i < count; ++i) {
    if (f[i] != float((i % 97) * g_size + (g_size - 1))) ++wrong;
  }
  expect(wrong == 0, "all_reduce float32 avg: " + std::to_string(wrong) + " wrong" + where);

  // int32 max.
  std::vector<int32_t> m(count);
  for (uint64_t i = 0; i < count; ++i) m[i] = int32_t((uint64_t(g_rank) * 31 + i) % 1001) - 500;
  st = kf_all_reduce(comm, m.data(), m.data(), count, KF_INT32, KF_MAX);
  expect(st == KF_SUCCESS, "all_reduce int32 max -> " + status_text(comm, st) + where);
  wrong = 0;
  for (uint64_t i = 0; i < count; ++i) {
    int32_t want = -1000;
    for (int r = 0; r < g_size; ++r) {
      const int32_t v = int32_t((uint64_t(r) * 31 + i) % 1001) - 500;
      if (v > want) want = v;
    }
    if (m[i] != want) ++wrong;
  }
  expect(wrong == 0, "all_reduce int32 max: " + std::to_string(wrong) + " wrong" + where);

  // Broadcast from a root that moves with the step.
  const int root = step % g_size;
  std::vector<int32_t> c(count, -1);
  if (g_rank == root) {
    for (uint64_t i = 0; i < count; ++i) c[i] = int32_t(i * 3 + uint64_t(root));
  }
  st = kf_broadcast(comm, c.data(), c.data(), count, KF_INT32, root);
  expect(st == KF_SUCCESS, "broadcast -> " + status_text(comm, st) + where);
  wrong = 0;
  for (uint64_t i = 0; i < count; ++i) {
    if (c[i] != int32_t(i * 3 + uint64_t(root))) ++wrong;
  }
  expect(wrong == 0, "broadcast: " + std::to_string(wrong) + " wrong" + where);

  // all_gather: block r holds r's values.
  const uint64_t per = count / uint64_t(g_size) + 1;
  std::vector<int32_t> mine(per), all(per * uint64_t(g_size), -1);
  for (uint64_t i = 0; i < per; ++i) mine[i] = int32_t(uint64_t(g_rank) * 100000 + i);
  st = kf_all_gather(comm, mine.data(), all.data(), per, KF_INT32);
  expect(st == KF_SUCCESS, "all_gather -> " + status_text(comm, st) + where);
  wrong = 0;
  for (uint64_t i = 0; i < all.size(); ++i) {
    if (all[i] != int32_t((i / per) * 100000 + i % per)) ++wrong;
  }
  expect(wrong == 0, "all_gather: " + std::to_string(wrong) + " wrong" + where);
}

const char* name_of(kf_strategy_t s) {
  switch (s) {
    case KF_STRATEGY_AUTO:
      return "auto";
    case KF_STRATEGY_FLAT:
      return "flat";
    case KF_STRATEGY_HIERARCHICAL:
      return "hier";
    case KF_STRATEGY_TREE:
      return "tree";
    case KF_STRATEGY_MULTI_TREE:
      return "multi-tree";
  }
  return "?";
}

}  // namespace

int main() {
  kf_comm_t comm = kfmp::init_or_die("mp_strategy_switch", &g_rank, &g_size);
  const kf_strategy_t cycle[] = {KF_STRATEGY_FLAT, KF_STRATEGY_HIERARCHICAL, KF_STRATEGY_TREE,
                                 KF_STRATEGY_MULTI_TREE, KF_STRATEGY_AUTO};
  const uint64_t counts[] = {1, 1000, 300001};
  kf_strategy_t current = KF_STRATEGY_AUTO;
  kf_status_t st = kf_comm_get_strategy(comm, &current);
  expect(st == KF_SUCCESS, "get_strategy -> " + status_text(comm, st));

  int step = 0;
  for (int round = 0; round < 10; ++round) {
    const kf_strategy_t next = cycle[round % 5];
    st = kf_comm_set_strategy(comm, next);
    expect(st == KF_SUCCESS,
           std::string("set_strategy ") + name_of(next) + " -> " + status_text(comm, st));
    st = kf_comm_get_strategy(comm, &current);
    expect(st == KF_SUCCESS && current == next, std::string("get_strategy after setting ") +
                                                    name_of(next) + " gives " + name_of(current));
    // A few steps under this strategy.
    for (int k = 0; k < 3; ++k, ++step) round_of_collectives(comm, counts[k], step, name_of(next));
  }

  if (g_size > 1) {
    // Mismatch: rank 0 wants hierarchical, the others tree.
    const kf_strategy_t before = current;
    st = kf_comm_set_strategy(comm, g_rank == 0 ? KF_STRATEGY_HIERARCHICAL : KF_STRATEGY_TREE);
    expect(st == KF_ERR_INVALID_USAGE, "mismatched set_strategy -> " + status_text(comm, st));
    std::printf("rank %d: mismatched switch -> %s\n", g_rank, status_text(comm, st).c_str());
    kf_comm_get_strategy(comm, &current);
    expect(current == before, std::string("strategy after a mismatch is ") + name_of(current) +
                                  ", want " + name_of(before));
    round_of_collectives(comm, 1000, step++, "after mismatch");

    // An invalid value on the last rank.
    const int bad = g_rank == g_size - 1 ? 99 : KF_STRATEGY_FLAT;
    st = kf_comm_set_strategy(comm, static_cast<kf_strategy_t>(bad));
    const kf_status_t want = bad == 99 ? KF_ERR_INVALID_ARGUMENT : KF_ERR_INVALID_USAGE;
    expect(st == want, "set_strategy with value " + std::to_string(bad) + " on rank " +
                           std::to_string(g_rank) + " -> " + status_text(comm, st));
    kf_comm_get_strategy(comm, &current);
    expect(current == before, "strategy after an invalid value changed");
    round_of_collectives(comm, 300001, step++, "after invalid value");
  }
  // A split communicator (ranks 0 .. size/2 and the rest: on 2 x 2 hosts the
  // first is 2 + 1 ranks, on 3 x 2 hosts 2 x 2) inherits the strategy and
  // runs every strategy on its own host layout.
  if (g_size > 1) {
    kf_comm_set_strategy(comm, KF_STRATEGY_TREE);
    kf_comm_t sub = nullptr;
    const int color = g_rank <= g_size / 2 ? 0 : 1;
    st = kf_comm_split(comm, color, g_rank, nullptr, &sub);
    expect(st == KF_SUCCESS && sub != nullptr, "kf_comm_split -> " + status_text(comm, st));
    if (sub != nullptr) {
      kf_strategy_t inherited = KF_STRATEGY_AUTO;
      kf_comm_get_strategy(sub, &inherited);
      expect(inherited == KF_STRATEGY_TREE,
             std::string("split communicator's strategy is ") + name_of(inherited) + ", want tree");
      const int parent_rank = g_rank, parent_size = g_size;
      kf_comm_rank(sub, &g_rank);
      kf_comm_size(sub, &g_size);
      for (int round = 0; round < 5; ++round) {
        st = kf_comm_set_strategy(sub, cycle[round]);
        expect(st == KF_SUCCESS,
               "set_strategy on the split communicator -> " + status_text(sub, st));
        round_of_collectives(sub, counts[round % 3], step++, name_of(cycle[round]));
      }
      kf_comm_destroy(sub);
      g_rank = parent_rank;
      g_size = parent_size;
    }
  }

  st = kf_comm_get_strategy(comm, nullptr);
  expect(st == KF_ERR_INVALID_ARGUMENT, "get_strategy(NULL) -> " + status_text(comm, st));
  st = kf_comm_set_strategy(nullptr, KF_STRATEGY_FLAT);
  expect(st == KF_ERR_INVALID_ARGUMENT,
         "set_strategy(NULL comm) -> " + std::string(kf_status_string(st)));

  kf_comm_destroy(comm);
  std::printf("%s strategy_switch rank %d: %ld checks, %ld failed\n",
              g_failures == 0 ? "PASS" : "FAIL", g_rank, g_checks, g_failures);
  return g_failures == 0 ? 0 : 1;
}
