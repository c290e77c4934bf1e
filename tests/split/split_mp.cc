// Communicator split under kfrun, with real ranks. Modes:
//   split_mp basic          parity split with reversed keys (rank, size, order,
//                           collectives with exact results), KF_SPLIT_NONE,
//                           nested split, split_host/split_cross on one host,
//                           two children on two threads while the parent runs
//                           on the main thread, children outliving the parent,
//                           argument errors with their last-error text.
//   split_mp leave          the last rank destroys its communicator instead of
//                           splitting: every other rank's split fails, no hang.
//   split_mp fail           rank 1 runs out of file descriptors (RLIMIT_NOFILE)
//                           while splitting, first before its listener opens,
//                           then while its new communicator sets up: every
//                           rank's split fails, within the timeout, and the
//                           parent still works (np >= 3).
//   split_mp timeout        (np 2, world timeout 1.5 s from its kf_config_t, the
//                           environment says 30 s) a child split with a NULL
//                           config inherits 1.5 s, one with timeout_ms 0.5 s
//                           has 0.5 s: an unmatched kf_recv times out so.
//   split_mp cluster K M    on K hosts x M ranks (tests/cluster): split_host has
//                           the M ranks of this host, split_cross one rank per
//                           host; collectives exact on both, and a two-level
//                           all_reduce through them equals the flat one.
// Every check prints "[rank] FAIL ..." and the program exits 1 if any failed.
#include <sys/resource.h>
#include <unistd.h>

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
int g_failed = 0;

#define CHECK(cond, ...)                                                     \
  do {                                                                       \
    if (!(cond)) {                                                           \
      std::fprintf(stderr, "[%d] FAIL %s:%d: ", g_rank, __FILE__, __LINE__); \
      std::fprintf(stderr, __VA_ARGS__);                                     \
      std::fprintf(stderr, "\n");                                            \
      ++g_failed;                                                            \
    }                                                                        \
  } while (0)

#define CHECK_OK(call, comm)                                             \
  do {                                                                   \
    kf_status_t st_ = (call);                                            \
    CHECK(st_ == KF_SUCCESS, "%s: %s: %s", #call, kf_status_string(st_), \
          kf_comm_last_error(comm));                                     \
  } while (0)

int comm_rank(kf_comm_t c) {
  int r = -1;
  kf_comm_rank(c, &r);
  return r;
}
int comm_size(kf_comm_t c) {
  int n = -1;
  kf_comm_size(c, &n);
  return n;
}

// The world ranks of `c`'s members, in `c`'s rank order (all_gather).
std::vector<int32_t> members_of(kf_comm_t c, int world_rank) {
  std::vector<int32_t> all(static_cast<size_t>(comm_size(c)), -1);
  int32_t mine = world_rank;
  CHECK_OK(kf_all_gather(c, &mine, all.data(), 1, KF_INT32), c);
  return all;
}

// Runs all_reduce (small and 1 Mi elements), broadcast from every root,
// all_gather, reduce_scatter and a send/recv ring on `c`, whose rank i is
// world rank members[i]; checks every element exactly. `salt` varies data.
void exercise(kf_comm_t c, const std::vector<int32_t>& members, int64_t salt) {
  const int n = comm_size(c), me = comm_rank(c);
  for (uint64_t count : {uint64_t(1), uint64_t(37), uint64_t(1) << 20}) {
    std::vector<int64_t> buf(count), expect(count, 0);
    for (uint64_t i = 0; i < count; ++i) {
      buf[i] = (members[static_cast<size_t>(me)] + 1) * 1000003LL + static_cast<int64_t>(i) * salt;
      for (int r = 0; r < n; ++r) {
        expect[i] +=
            (members[static_cast<size_t>(r)] + 1) * 1000003LL + static_cast<int64_t>(i) * salt;
      }
    }
    CHECK_OK(kf_all_reduce(c, buf.data(), buf.data(), count, KF_INT64, KF_SUM), c);
    uint64_t bad = 0;
    for (uint64_t i = 0; i < count; ++i) bad += buf[i] != expect[i];
    CHECK(bad == 0, "all_reduce of %" PRIu64 " int64: %" PRIu64 " wrong elements", count, bad);
  }
  for (int root = 0; root < n; ++root) {
    std::vector<int32_t> buf(1000, -1);
    if (me == root) {
      for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<int32_t>(root * 7919 + i + salt);
    }
    CHECK_OK(kf_broadcast(c, buf.data(), buf.data(), buf.size(), KF_INT32, root), c);
    size_t bad = 0;
    for (size_t i = 0; i < buf.size(); ++i)
      bad += buf[i] != static_cast<int32_t>(root * 7919 + i + salt);
    CHECK(bad == 0, "broadcast from %d: %zu wrong elements", root, bad);
  }
  {
    const size_t k = 513;
    std::vector<int32_t> send(k), recv(k * static_cast<size_t>(n), -1);
    for (size_t i = 0; i < k; ++i)
      send[i] = members[static_cast<size_t>(me)] * 100000 + static_cast<int32_t>(i);
    CHECK_OK(kf_all_gather(c, send.data(), recv.data(), k, KF_INT32), c);
    size_t bad = 0;
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < k; ++i)
        bad += recv[static_cast<size_t>(r) * k + i] !=
               members[static_cast<size_t>(r)] * 100000 + static_cast<int32_t>(i);
    CHECK(bad == 0, "all_gather: %zu wrong elements", bad);
  }
  {
    const size_t k = 100;
    std::vector<int32_t> send(k * static_cast<size_t>(n)), recv(k, -1);
    for (size_t i = 0; i < send.size(); ++i)
      send[i] = static_cast<int32_t>(i) + members[static_cast<size_t>(me)];
    CHECK_OK(kf_reduce_scatter(c, send.data(), recv.data(), k, KF_INT32, KF_SUM), c);
    int32_t member_sum = 0;
    for (int32_t m : members) member_sum += m;
    size_t bad = 0;
    for (size_t i = 0; i < k; ++i)
      bad += recv[i] != n * static_cast<int32_t>(static_cast<size_t>(me) * k + i) + member_sum;
    CHECK(bad == 0, "reduce_scatter: %zu wrong elements", bad);
  }
  if (n > 1) {
    int32_t out = members[static_cast<size_t>(me)], in = -1;
    int next = (me + 1) % n, prev = (me + n - 1) % n;
    if (me % 2 == 0) {
      CHECK_OK(kf_send(c, &out, 1, KF_INT32, next), c);
      CHECK_OK(kf_recv(c, &in, 1, KF_INT32, prev), c);
    } else {
      CHECK_OK(kf_recv(c, &in, 1, KF_INT32, prev), c);
      CHECK_OK(kf_send(c, &out, 1, KF_INT32, next), c);
    }
    CHECK(in == members[static_cast<size_t>(prev)], "recv from %d: got %d", prev, in);
  }
  CHECK_OK(kf_barrier(c), c);
}

// Checks that `c` has exactly `expect` (world ranks in order) as members.
void check_members(kf_comm_t c, const char* what, const std::vector<int32_t>& expect,
                   int world_rank) {
  CHECK(comm_size(c) == static_cast<int>(expect.size()), "%s: size %d, expected %zu", what,
        comm_size(c), expect.size());
  int pos = -1;
  for (size_t i = 0; i < expect.size(); ++i)
    if (expect[i] == world_rank) pos = static_cast<int>(i);
  CHECK(comm_rank(c) == pos, "%s: rank %d, expected %d", what, comm_rank(c), pos);
  if (comm_size(c) != static_cast<int>(expect.size())) return;
  std::vector<int32_t> got = members_of(c, world_rank);
  CHECK(got == expect, "%s: members are not in the expected order", what);
}

// Loops all_reduce on `c` (int32 sums of the members' world ranks).
void hammer(kf_comm_t c, const std::vector<int32_t>& members, int rounds, int world_rank) {
  int32_t member_sum = 0;
  for (int32_t m : members) member_sum += m;
  for (int i = 0; i < rounds; ++i) {
    std::vector<int32_t> buf(4096, world_rank + i);
    CHECK_OK(kf_all_reduce(c, buf.data(), buf.data(), buf.size(), KF_INT32, KF_SUM), c);
    int32_t want = member_sum + static_cast<int32_t>(members.size()) * i;
    size_t bad = 0;
    for (int32_t v : buf) bad += v != want;
    CHECK(bad == 0, "concurrent all_reduce round %d: %zu wrong", i, bad);
  }
}

void argument_errors(kf_comm_t world) {
  kf_comm_t out = reinterpret_cast<kf_comm_t>(0x1);
  kf_status_t st = kf_comm_split(world, 0, 0, nullptr, nullptr);
  CHECK(st == KF_ERR_INVALID_ARGUMENT, "NULL newcomm: %s", kf_status_string(st));
  CHECK(std::strstr(kf_comm_last_error(world), "newcomm is NULL") != nullptr,
        "NULL newcomm text: '%s'", kf_comm_last_error(world));
  st = kf_comm_split(nullptr, 0, 0, nullptr, &out);
  CHECK(st == KF_ERR_INVALID_ARGUMENT && out == nullptr, "NULL comm: %s", kf_status_string(st));
  CHECK(std::strstr(kf_comm_last_error(nullptr), "kf_comm_split") != nullptr,
        "NULL comm text: '%s'", kf_comm_last_error(nullptr));
  int not_a_comm = 0;
  st = kf_comm_split_host(reinterpret_cast<kf_comm_t>(&not_a_comm), nullptr, &out);
  CHECK(st == KF_ERR_INVALID_ARGUMENT, "foreign handle: %s", kf_status_string(st));
  CHECK(std::strstr(kf_comm_last_error(nullptr), "not a live communicator") != nullptr,
        "foreign handle text: '%s'", kf_comm_last_error(nullptr));
  st = kf_comm_split_cross(world, nullptr, nullptr);
  CHECK(st == KF_ERR_INVALID_ARGUMENT, "split_cross NULL newcomm: %s", kf_status_string(st));
  st = kf_comm_split(world, -5, 0, nullptr, &out);
  CHECK(st == KF_ERR_INVALID_ARGUMENT, "color -5: %s", kf_status_string(st));
  CHECK(std::strstr(kf_comm_last_error(world), "color -5") != nullptr, "color text: '%s'",
        kf_comm_last_error(world));
  kf_config_t bad = KF_CONFIG_INITIALIZER;
  bad.magic = 0;
  st = kf_comm_split(world, 0, 0, &bad, &out);
  CHECK(st == KF_ERR_INVALID_ARGUMENT, "bad config: %s", kf_status_string(st));
  CHECK(std::strstr(kf_comm_last_error(world), "KF_CONFIG_INITIALIZER") != nullptr,
        "config text: '%s'", kf_comm_last_error(world));
  // None of the above talked to the peers: the parent still works.
  int32_t one = 1, total = 0;
  CHECK_OK(kf_all_reduce(world, &one, &total, 1, KF_INT32, KF_SUM), world);
  CHECK(total == comm_size(world), "parent all_reduce after argument errors: %d", total);
}

int basic(kf_comm_t world, int rank, int size) {
  argument_errors(world);

  // 1. Parity, reversed keys: members of my parity, highest world rank first.
  kf_comm_t parity = nullptr;
  CHECK_OK(kf_comm_split(world, rank % 2, size - rank, nullptr, &parity), world);
  std::vector<int32_t> parity_members;
  for (int r = size - 1; r >= 0; --r)
    if (r % 2 == rank % 2) parity_members.push_back(r);
  if (parity == nullptr) return 1;
  check_members(parity, "parity", parity_members, rank);
  exercise(parity, parity_members, 3);

  // 2. KF_SPLIT_NONE on the first and last ranks; the others share color 7
  // and key 0 (ties keep the parent's order).
  kf_comm_t middle = reinterpret_cast<kf_comm_t>(0x1);
  bool outside = rank == 0 || rank == size - 1;
  kf_config_t named = KF_CONFIG_INITIALIZER;
  named.name = "middle";
  CHECK_OK(kf_comm_split(world, outside ? KF_SPLIT_NONE : 7, 0, &named, &middle), world);
  std::vector<int32_t> middle_members;
  for (int r = 1; r < size - 1; ++r) middle_members.push_back(r);
  if (outside) {
    CHECK(middle == nullptr, "KF_SPLIT_NONE gave a communicator");
  } else if (middle != nullptr) {
    check_members(middle, "middle", middle_members, rank);
    exercise(middle, middle_members, 5);
  }

  // 3. A split of a split: the parity communicator by halves of its ranks.
  kf_comm_t nested = nullptr;
  int prank = comm_rank(parity), psize = comm_size(parity);
  CHECK_OK(kf_comm_split(parity, prank < psize / 2 ? 0 : 1, prank, nullptr, &nested), parity);
  if (nested != nullptr) {
    std::vector<int32_t> nested_members;
    for (int i = 0; i < psize; ++i)
      if ((i < psize / 2) == (prank < psize / 2))
        nested_members.push_back(parity_members[static_cast<size_t>(i)]);
    check_members(nested, "nested", nested_members, rank);
    exercise(nested, nested_members, 11);
  }

  // 4. Topology splits on one host: by host is the whole job, in rank order;
  // across hosts every rank is alone.
  kf_comm_t host = nullptr, cross = nullptr;
  CHECK_OK(kf_comm_split_host(world, nullptr, &host), world);
  CHECK_OK(kf_comm_split_cross(world, nullptr, &cross), world);
  std::vector<int32_t> everyone;
  for (int r = 0; r < size; ++r) everyone.push_back(r);
  if (host != nullptr) {
    check_members(host, "host", everyone, rank);
    exercise(host, everyone, 13);
  }
  if (cross != nullptr) {
    check_members(cross, "cross", {rank}, rank);
    exercise(cross, {rank}, 17);
  }

  // 5. Two children on two threads while the parent works on this one.
  std::thread a([&] { hammer(parity, parity_members, 200, rank); });
  std::thread b([&] { hammer(host, everyone, 200, rank); });
  hammer(world, everyone, 200, rank);
  a.join();
  b.join();

  // 6. The parent goes first; its children keep working.
  CHECK_OK(kf_comm_destroy(world), nullptr);
  exercise(parity, parity_members, 19);
  if (middle != nullptr) exercise(middle, middle_members, 23);
  if (nested != nullptr) CHECK_OK(kf_comm_destroy(nested), nullptr);
  std::thread c([&] { exercise(host, everyone, 29); });
  exercise(parity, parity_members, 31);
  c.join();
  for (kf_comm_t x : {parity, middle, host, cross}) CHECK_OK(kf_comm_destroy(x), nullptr);
  return 0;
}

int leave(kf_comm_t world, int rank, int size) {
  if (rank == size - 1) {
    CHECK_OK(kf_comm_destroy(world), nullptr);
    return 0;
  }
  kf_comm_t out = reinterpret_cast<kf_comm_t>(0x1);
  kf_status_t st = kf_comm_split(world, rank % 2, rank, nullptr, &out);
  CHECK(st != KF_SUCCESS && out == nullptr, "split without the last rank: %s",
        kf_status_string(st));
  std::printf("[%d] split without rank %d: %s: %s\n", rank, size - 1, kf_status_string(st),
              kf_comm_last_error(world));
  kf_comm_destroy(world);
  return 0;
}

// The lowest free file descriptor number.
int lowest_free_fd() {
  int fd = dup(0);
  if (fd >= 0) close(fd);
  return fd;
}

// Splits by parity with rank 1 limited to `spare` new file descriptors:
// 0 fails its listener (the exchange tells every rank), 1 lets the listener
// open and fails the next descriptor of its new communicator (the closing
// agreement tells every rank).
void split_short_of_fds(kf_comm_t world, int rank, int spare) {
  rlimit saved{};
  getrlimit(RLIMIT_NOFILE, &saved);
  if (rank == 1) {
    rlimit low = saved;
    low.rlim_cur = static_cast<rlim_t>(lowest_free_fd() + spare);
    CHECK(setrlimit(RLIMIT_NOFILE, &low) == 0, "setrlimit");
  }
  kf_comm_t out = reinterpret_cast<kf_comm_t>(0x1);
  kf_status_t st = kf_comm_split(world, rank % 2, rank, nullptr, &out);
  if (rank == 1) setrlimit(RLIMIT_NOFILE, &saved);
  CHECK(st != KF_SUCCESS && out == nullptr, "spare %d: split succeeded", spare);
  std::printf("[%d] spare %d: %s: %s\n", rank, spare, kf_status_string(st),
              kf_comm_last_error(world));
  // The other group connected fine; its error names the failed rank(s).
  // Rank 1's group partners report their own failure to reach it.
  if (rank % 2 == 0 && st != KF_SUCCESS) {
    CHECK(std::strstr(kf_comm_last_error(world), "rank(s) 1") != nullptr,
          "spare %d: error does not name rank 1", spare);
  }
}

int fail(kf_comm_t world, int rank, int size) {
  split_short_of_fds(world, rank, 0);
  split_short_of_fds(world, rank, 1);
  // Both failures were agreed on: the parent works, and splits again.
  int32_t one = 1, total = 0;
  CHECK_OK(kf_all_reduce(world, &one, &total, 1, KF_INT32, KF_SUM), world);
  CHECK(total == size, "parent all_reduce after failed splits: %d", total);
  kf_comm_t parity = nullptr;
  CHECK_OK(kf_comm_split(world, rank % 2, rank, nullptr, &parity), world);
  std::vector<int32_t> members;
  for (int r = rank % 2; r < size; r += 2) members.push_back(r);
  if (parity != nullptr) {
    check_members(parity, "parity after failures", members, rank);
    exercise(parity, members, 47);
  }
  CHECK_OK(kf_comm_destroy(parity), nullptr);
  CHECK_OK(kf_comm_destroy(world), nullptr);
  return 0;
}

// Rank 0 waits in a kf_recv on `child` that rank 1 never matches: returns
// how long it took to time out, in ms (-1 on rank 1 or another result).
long recv_timeout_ms(kf_comm_t sync, kf_comm_t child, int rank) {
  long ms = -1;
  if (rank == 0) {
    int32_t v = 0;
    auto start = std::chrono::steady_clock::now();
    kf_status_t st = kf_recv(child, &v, 1, KF_INT32, 1);
    ms = static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::steady_clock::now() - start)
                               .count());
    CHECK(st == KF_ERR_TIMEOUT, "unmatched recv: %s", kf_status_string(st));
    if (st != KF_ERR_TIMEOUT) ms = -1;
  }
  CHECK_OK(kf_barrier(sync), sync);  // rank 1 waits here meanwhile (30 s timeout)
  return ms;
}

int timeouts(int rank, int size) {
  kf_config_t config = KF_CONFIG_INITIALIZER;
  config.timeout_ms = 1500;
  kf_comm_t world = nullptr;
  kf_status_t st = kf_comm_init_from_env(&config, &world);
  CHECK(st == KF_SUCCESS, "init with a 1.5 s timeout: %s", kf_status_string(st));
  if (world == nullptr || size != 2) return 1;
  kf_comm_t inherit = nullptr, own = nullptr, sync = nullptr;
  kf_config_t short_config = KF_CONFIG_INITIALIZER, long_config = KF_CONFIG_INITIALIZER;
  short_config.timeout_ms = 500;
  long_config.timeout_ms = 30000;
  CHECK_OK(kf_comm_split(world, 0, rank, &long_config, &sync), world);
  CHECK_OK(kf_comm_split(world, 0, rank, nullptr, &inherit), world);
  CHECK_OK(kf_comm_split(world, 0, rank, &short_config, &own), world);
  if (inherit == nullptr || own == nullptr || sync == nullptr) return 1;
  long inherited = recv_timeout_ms(sync, inherit, rank);
  long given = recv_timeout_ms(sync, own, rank);
  if (rank == 0) {
    std::printf("[0] timed out after %ld ms (inherited 1500) and %ld ms (config 500)\n", inherited,
                given);
    CHECK(inherited >= 1400 && inherited < 10000, "inherited timeout: %ld ms, expected about 1500",
          inherited);
    CHECK(given >= 450 && given < 1400, "config timeout: %ld ms, expected about 500", given);
  }
  for (kf_comm_t c : {inherit, own, sync, world}) kf_comm_destroy(c);
  return 0;
}

int cluster(kf_comm_t world, int rank, int size, int k, int m) {
  CHECK(size == k * m, "size %d is not %d x %d", size, k, m);
  int host_index = -1;
  CHECK_OK(kf_comm_host_index(world, rank, &host_index), world);
  CHECK(host_index == rank / m, "host index %d, expected %d (ranks fill hosts in order)",
        host_index, rank / m);
  kf_comm_t host = nullptr, cross = nullptr;
  CHECK_OK(kf_comm_split_host(world, nullptr, &host), world);
  CHECK_OK(kf_comm_split_cross(world, nullptr, &cross), world);
  if (host == nullptr || cross == nullptr) return 1;
  std::vector<int32_t> host_members, cross_members;
  for (int i = 0; i < m; ++i) host_members.push_back(host_index * m + i);
  for (int h = 0; h < k; ++h) cross_members.push_back(h * m + rank % m);
  check_members(host, "host", host_members, rank);
  check_members(cross, "cross", cross_members, rank);
  exercise(host, host_members, 37);
  exercise(cross, cross_members, 41);

  // Two levels: reduce on the host, all_reduce across hosts among local rank
  // 0, broadcast on the host. Equals the flat all_reduce, exactly.
  const size_t count = 1 << 18;
  std::vector<int64_t> flat(count), two(count);
  for (size_t i = 0; i < count; ++i) flat[i] = two[i] = (rank + 1) * 7 + static_cast<int64_t>(i);
  CHECK_OK(kf_all_reduce(world, flat.data(), flat.data(), count, KF_INT64, KF_SUM), world);
  CHECK_OK(kf_reduce(host, two.data(), two.data(), count, KF_INT64, KF_SUM, 0), host);
  if (comm_rank(host) == 0)
    CHECK_OK(kf_all_reduce(cross, two.data(), two.data(), count, KF_INT64, KF_SUM), cross);
  CHECK_OK(kf_broadcast(host, two.data(), two.data(), count, KF_INT64, 0), host);
  CHECK(flat == two, "two-level all_reduce differs from the flat one");
  CHECK(flat[5] == 7 * size * (size + 1) / 2 + 5LL * size, "flat all_reduce: %" PRId64, flat[5]);

  // The children on two threads at once, the parent on this one.
  std::thread a([&] { hammer(host, host_members, 50, rank); });
  std::thread b([&] { hammer(cross, cross_members, 50, rank); });
  std::vector<int32_t> everyone;
  for (int r = 0; r < size; ++r) everyone.push_back(r);
  hammer(world, everyone, 50, rank);
  a.join();
  b.join();
  CHECK_OK(kf_comm_destroy(world), nullptr);
  exercise(cross, cross_members, 43);
  CHECK_OK(kf_comm_destroy(host), nullptr);
  CHECK_OK(kf_comm_destroy(cross), nullptr);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "basic";
  int rank = -1, size = -1;
  if (mode == "timeout") {
    // Makes its own communicator (with a config); rank and size from kfrun.
    g_rank = rank = std::atoi(std::getenv("KF_RANK") ? std::getenv("KF_RANK") : "0");
    size = std::atoi(std::getenv("KF_SIZE") ? std::getenv("KF_SIZE") : "1");
    int rc = timeouts(rank, size);
    if (g_failed > 0 || rc != 0) {
      std::fprintf(stderr, "[%d] split_mp timeout: %d checks failed\n", rank, g_failed);
      return 1;
    }
    std::printf("[%d] split_mp timeout: all checks passed\n", rank);
    return 0;
  }
  kf_comm_t world = kfmp::init_or_die("split_mp", &rank, &size);
  g_rank = rank;
  int rc = 2;
  if (mode == "basic") {
    rc = basic(world, rank, size);
  } else if (mode == "leave") {
    rc = leave(world, rank, size);
  } else if (mode == "fail" && size >= 3) {
    rc = fail(world, rank, size);
  } else if (mode == "cluster" && argc > 3) {
    rc = cluster(world, rank, size, std::atoi(argv[2]), std::atoi(argv[3]));
  } else {
    std::fprintf(stderr, "usage: split_mp basic | leave | fail | timeout | cluster K M\n");
    return 2;
  }
  if (g_failed > 0 || rc != 0) {
    std::fprintf(stderr, "[%d] split_mp %s: %d checks failed\n", rank, mode.c_str(), g_failed);
    return 1;
  }
  std::printf("[%d] split_mp %s: all checks passed\n", rank, mode.c_str());
  return 0;
}
