#include "base/block_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace kf {
namespace {

TEST(BlockPool, ReusesBlocksOfItsSize) {
  BlockPool pool(2);
  void* a = pool.allocate(48);
  void* b = pool.allocate(48);
  pool.deallocate(a, 48);
  void* other = pool.allocate(100);  // another size: not the free block
  EXPECT_NE(other, a);
  pool.deallocate(other, 100);
  void* c = pool.allocate(48);
  if (kKeepMemory) {
    EXPECT_EQ(c, a);  // the latest freed first
  }
  pool.deallocate(b, 48);
  pool.deallocate(c, 48);
}

// A thread keeps kThreadKeep blocks of a size, the pool `keep` more; the
// rest go back to operator delete, and allocations take the thread's
// first, then the pool's.
TEST(BlockPool, KeepsUpToTheThreadsAndThePoolsLimits) {
  constexpr size_t kBytes = 56;  // a size no other test of this thread uses
  const size_t keep = 3, mine = BlockPool::kThreadKeep;
  BlockPool pool(keep);
  std::vector<void*> blocks;
  for (size_t i = 0; i < mine + keep + 5; ++i) blocks.push_back(pool.allocate(kBytes));
  for (void* p : blocks) pool.deallocate(p, kBytes);
  if (!kKeepMemory) {
    EXPECT_EQ(pool.kept(), 0u);
    EXPECT_EQ(BlockPool::thread_kept(kBytes), 0u);
    return;
  }
  EXPECT_EQ(BlockPool::thread_kept(kBytes), mine);
  EXPECT_EQ(pool.kept(), keep);
  std::vector<void*> again;
  for (size_t i = 0; i < mine + keep; ++i) again.push_back(pool.allocate(kBytes));
  EXPECT_EQ(BlockPool::thread_kept(kBytes), 0u);
  EXPECT_EQ(pool.kept(), 0u);
  for (void* p : again) {  // each one of the freed blocks
    EXPECT_NE(std::find(blocks.begin(), blocks.end(), p), blocks.end());
  }
  for (void* p : again) pool.deallocate(p, kBytes);
}

// Blocks freed by a thread that allocates none of their size (it makes no
// shelf for them: deallocate() never allocates) go to the pool's list, and
// serve the next allocation of another thread.
TEST(BlockPool, HandsBlocksBetweenThreads) {
  constexpr size_t kBytes = 72;
  BlockPool pool(1024);
  std::vector<void*> blocks;
  for (size_t i = 0; i < BlockPool::kThreadKeep + 10; ++i) blocks.push_back(pool.allocate(kBytes));
  std::thread t([&] {
    for (void* p : blocks) pool.deallocate(p, kBytes);
    EXPECT_EQ(BlockPool::thread_kept(kBytes), 0u);
  });
  t.join();
  if (kKeepMemory) {
    EXPECT_EQ(pool.kept(), blocks.size());
    void* p = pool.allocate(kBytes);
    EXPECT_NE(std::find(blocks.begin(), blocks.end(), p), blocks.end());
    pool.deallocate(p, kBytes);
  }
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
