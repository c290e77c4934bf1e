#include <gtest/gtest.h>

#include <memory>

#include "base/block_pool.h"
#include "sched/async_event.h"

namespace kf {
namespace {

std::unique_ptr<char[]> block(size_t bytes) {
  return std::unique_ptr<char[]>(new char[bytes]);
}

// The smallest kept block that fits serves a request; a new one otherwise.
TEST(ScratchCache, ReusesTheSmallestBlockThatFits) {
  if (!kKeepMemory) GTEST_SKIP() << "nothing is kept under AddressSanitizer";
  ScratchCache c;
  size_t got = 0;
  std::unique_ptr<char[]> small = c.take(1000, &got), large = c.take(5000, &got);
  char* const small_at = small.get();
  c.give(std::move(small), 1000);
  c.give(std::move(large), 5000);
  EXPECT_EQ(c.kept_bytes(), 6000u);
  std::unique_ptr<char[]> b = c.take(800, &got);
  EXPECT_EQ(b.get(), small_at);
  EXPECT_EQ(got, 1000u);
  EXPECT_EQ(c.kept_bytes(), 5000u);
  std::unique_ptr<char[]> fresh = c.take(9000, &got);
  EXPECT_EQ(got, 9000u);
  EXPECT_EQ(c.kept_bytes(), 5000u);
}

// At most kKeep blocks and kKeepBytes: the smaller blocks leave first, and a
// block larger than every kept one, or than the byte bound, is freed.
TEST(ScratchCache, BoundsWhatItKeeps) {
  if (!kKeepMemory) GTEST_SKIP() << "nothing is kept under AddressSanitizer";
  ScratchCache c;
  for (size_t i = 1; i <= ScratchCache::kKeep + 4; ++i) c.give(block(i), i);
  size_t want = 0;
  for (size_t i = 5; i <= ScratchCache::kKeep + 4; ++i) want += i;  // the largest kKeep
  EXPECT_EQ(c.kept_bytes(), want);
  c.give(block(1), 1);  // smaller than every kept block: freed
  EXPECT_EQ(c.kept_bytes(), want);

  ScratchCache d;
  const size_t quarter = ScratchCache::kKeepBytes / 4;
  for (int i = 0; i < 4; ++i) d.give(block(quarter), quarter);
  EXPECT_EQ(d.kept_bytes(), ScratchCache::kKeepBytes);
  // Displaces two quarter blocks (with one gone, a byte too many).
  d.give(block(quarter + 1), quarter + 1);
  EXPECT_EQ(d.kept_bytes(), 2 * quarter + quarter + 1);
  d.give(block(ScratchCache::kKeepBytes + 1), ScratchCache::kKeepBytes + 1);  // too large
  EXPECT_EQ(d.kept_bytes(), 2 * quarter + quarter + 1);
}

}  // namespace
}  // namespace kf
