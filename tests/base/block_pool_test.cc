#include "base/block_pool.h"

#include <gtest/gtest.h>

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
  void* c = pool.allocate(48);
  pool.deallocate(a, 48);
  pool.deallocate(b, 48);
  pool.deallocate(c, 48);  // beyond `keep`: back to operator delete
  void* d = pool.allocate(48);
  void* e = pool.allocate(48);
  EXPECT_TRUE((d == a && e == b) || (d == b && e == a));
  void* other = pool.allocate(100);  // another size: not from the free list
  EXPECT_NE(other, a);
  EXPECT_NE(other, b);
  pool.deallocate(other, 100);
  pool.deallocate(d, 48);
  pool.deallocate(e, 48);
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
  }
  EXPECT_EQ(live, 0);
}

}  // namespace
}  // namespace kf
