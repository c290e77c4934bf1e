#include "base/block_pool.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace kf {
namespace {

TEST(BlockPool, ReusesBlocksOfItsSizeUpToItsKeep) {
  BlockPool pool(2);
  void* a = pool.allocate(48);
  void* b = pool.allocate(48);
  void* c = pool.allocate(48);
  pool.deallocate(a, 48);
  void* other = pool.allocate(100);  // another size: not the free block
  EXPECT_NE(other, a);
  pool.deallocate(other, 100);
  pool.deallocate(b, 48);
  pool.deallocate(c, 48);  // beyond `keep`: back to operator delete
  void* d = pool.allocate(48);
  void* e = pool.allocate(48);
  void* f = pool.allocate(48);  // the free list is empty by now: a new block
  if (kKeepMemory) {
    EXPECT_TRUE((d == a && e == b) || (d == b && e == a));
    EXPECT_NE(f, a);
    EXPECT_NE(f, b);
  }
  pool.deallocate(d, 48);
  pool.deallocate(e, 48);
  pool.deallocate(f, 48);
}

struct Counted {
  explicit Counted(int* live, std::string s) : live_(live), text(std::move(s)) { ++*live_; }
  ~Counted() { --*live_; }
  int* live_;
  std::string text;
};

TEST(BlockPool, BacksSharedObjectsThatDieAnywhere) {
  BlockPool pool(64);
  int live = 0;
  {
    std::vector<std::shared_ptr<Counted>> objs;
    for (int i = 0; i < 100; ++i) {
      objs.push_back(std::allocate_shared<Counted>(PoolAllocator<Counted>(&pool), &live,
                                                   "object number " + std::to_string(i)));
    }
    EXPECT_EQ(live, 100);
    EXPECT_EQ(objs[42]->text, "object number 42");
    // Half die on other threads.
    std::thread t([&] {
      for (int i = 0; i < 50; ++i) objs[static_cast<size_t>(i)].reset();
    });
    t.join();
    EXPECT_EQ(live, 50);
    for (int i = 0; i < 100; ++i) {
      objs.push_back(std::allocate_shared<Counted>(PoolAllocator<Counted>(&pool), &live, "again"));
    }
    EXPECT_EQ(live, 150);
    // The memory of a dead one serves the next.
    Counted* before = objs.back().get();
    objs.back().reset();
    auto again = std::allocate_shared<Counted>(PoolAllocator<Counted>(&pool), &live, "reused");
    if (kKeepMemory) {
      EXPECT_EQ(again.get(), before);
    }
    EXPECT_EQ(again->text, "reused");
  }
  EXPECT_EQ(live, 0);
}

// Threads that allocate and free at once (for ThreadSanitizer, and a
// consistent free list).
TEST(BlockPool, ManyThreads) {
  BlockPool pool(16);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&pool, t] {
      std::vector<void*> held;
      for (int i = 0; i < 20000; ++i) {
        if (held.size() < 8 && (i + t) % 3 != 0) {
          void* p = pool.allocate(64);
          static_cast<char*>(p)[0] = static_cast<char>(i);
          held.push_back(p);
        } else if (!held.empty()) {
          pool.deallocate(held.back(), 64);
          held.pop_back();
        }
      }
      for (void* p : held) pool.deallocate(p, 64);
    });
  }
  for (auto& th : threads) th.join();
}

}  // namespace
}  // namespace kf
