// LaneLog (transport/shm/lane_log.h) over plain memory: the record rings
// (full, room again, order, every reader), news(), and the shared log.
#include "transport/shm/lane_log.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

namespace kf {
namespace {

// Zeroed, cache-line aligned regions of `n` local ranks (as the shared
// segment provides them).
struct Regions {
  explicit Regions(int n) {
    const size_t bytes = LaneLog::region_bytes(n);
    for (int i = 0; i < n; ++i) {
      char* p = static_cast<char*>(std::aligned_alloc(64, bytes));
      std::memset(p, 0, bytes);
      mem.emplace_back(p, &std::free);
      ptrs.push_back(p);
    }
  }
  std::vector<std::unique_ptr<char, decltype(&std::free)>> mem;
  std::vector<char*> ptrs;
};

LaneRecord record(uint64_t seq) {
  LaneRecord r;
  r.name_hash = 0xabc;
  r.seq = seq;
  r.count = seq + 1;
  std::memcpy(r.payload, &seq, sizeof(seq));
  r.payload_bytes = sizeof(seq);
  return r;
}

TEST(LaneLog, RingFillsUntilEveryReaderTakesThenKeepsOrder) {
  Regions regions(3);
  LaneLog writer(regions.ptrs, 0), slow(regions.ptrs, 1), fast(regions.ptrs, 2);
  LaneRecord got;
  EXPECT_FALSE(slow.news(0));
  for (uint64_t i = 0; i < LaneLog::kRecords; ++i) ASSERT_TRUE(writer.publish(record(i)));
  EXPECT_FALSE(writer.publish(record(LaneLog::kRecords)));  // nobody has read: full
  EXPECT_TRUE(slow.news(0));
  for (uint64_t i = 0; i < LaneLog::kRecords; ++i) {  // one reader takes all
    ASSERT_TRUE(fast.take(0, &got));
    ASSERT_EQ(got.seq, i);
  }
  EXPECT_FALSE(fast.take(0, &got));
  EXPECT_FALSE(writer.publish(record(LaneLog::kRecords)));  // the other still lags
  ASSERT_TRUE(slow.take(0, &got));
  EXPECT_EQ(got.seq, 0u);
  EXPECT_TRUE(writer.publish(record(LaneLog::kRecords)));  // one slot free again
  EXPECT_FALSE(writer.publish(record(LaneLog::kRecords + 1)));
  for (uint64_t i = 1; i <= LaneLog::kRecords; ++i) {
    ASSERT_TRUE(slow.take(0, &got));
    ASSERT_EQ(got.seq, i);
    ASSERT_EQ(got.count, i + 1);
    uint64_t payload = 0;
    std::memcpy(&payload, got.payload, sizeof(payload));
    ASSERT_EQ(payload, i);
  }
  ASSERT_TRUE(fast.take(0, &got));
  EXPECT_EQ(got.seq, LaneLog::kRecords);
  EXPECT_FALSE(slow.news(0));
  EXPECT_FALSE(fast.news(0));
}

TEST(LaneLog, LogAppendsOnceAndWaitsForTheSlowestRank) {
  Regions regions(2);
  LaneLog a(regions.ptrs, 0), b(regions.ptrs, 1);
  LaneEntry e;
  e.name_hash = 7;
  e.part = 3;
  EXPECT_FALSE(b.entry(0, &e));
  ASSERT_TRUE(a.append(0, e));
  EXPECT_FALSE(b.append(0, e));  // someone appended first
  EXPECT_TRUE(b.news(0));
  LaneEntry got;
  ASSERT_TRUE(b.entry(0, &got));
  EXPECT_EQ(got.name_hash, 7u);
  EXPECT_EQ(got.part, 3u);
  // Entry pos may reuse a slot only once every rank processed pos - kEntries.
  for (uint64_t pos = 1; pos < LaneLog::kEntries; ++pos) ASSERT_TRUE(a.append(pos, e));
  a.processed(LaneLog::kEntries);
  EXPECT_FALSE(a.append(LaneLog::kEntries, e));  // b has processed nothing
  b.processed(1);
  EXPECT_TRUE(a.append(LaneLog::kEntries, e));
}

TEST(LaneLog, BatchAppearsWholeAndNeedsRoomForItsLastEntry) {
  Regions regions(2);
  LaneLog a(regions.ptrs, 0), b(regions.ptrs, 1);
  LaneEntry batch[3];
  for (uint32_t i = 0; i < 3; ++i) {
    batch[i].name_hash = 100 + i;
    batch[i].part = i;
  }
  EXPECT_FALSE(a.append(0, batch, 0));
  EXPECT_FALSE(a.append(0, batch, LaneLog::kMaxBatch + 1));
  ASSERT_TRUE(a.append(0, batch, 3));
  EXPECT_FALSE(b.append(0, batch, 3));  // someone appended first
  LaneEntry got;
  for (uint64_t pos = 0; pos < 3; ++pos) {
    ASSERT_TRUE(b.entry(pos, &got));
    EXPECT_EQ(got.name_hash, 100 + pos);
    EXPECT_EQ(got.part, pos);
  }
  EXPECT_FALSE(b.entry(3, &got));
  // Fill the log up to two slots short of a lap: a batch of three does not
  // fit until the slowest rank has processed one more entry.
  LaneEntry e;
  for (uint64_t pos = 3; pos < LaneLog::kEntries - 2; ++pos) ASSERT_TRUE(a.append(pos, e));
  a.processed(LaneLog::kEntries - 2);
  EXPECT_FALSE(a.append(LaneLog::kEntries - 2, batch, 3));
  EXPECT_TRUE(a.append(LaneLog::kEntries - 2, batch, 2));
  b.processed(1);
  EXPECT_TRUE(a.append(LaneLog::kEntries, batch, 1));
  EXPECT_FALSE(a.append(LaneLog::kEntries + 1, batch, 1));
  // A batch across the end of the slots: its entries come back in order.
  a.processed(LaneLog::kEntries + 1);
  b.processed(LaneLog::kEntries + 1);
  for (uint64_t pos = LaneLog::kEntries + 1; pos < 2 * LaneLog::kEntries - 1; ++pos) {
    ASSERT_TRUE(a.append(pos, e));
  }
  a.processed(2 * LaneLog::kEntries - 1);
  b.processed(2 * LaneLog::kEntries - 1);
  ASSERT_TRUE(b.append(2 * LaneLog::kEntries - 1, batch, 3));
  for (uint64_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(a.entry(2 * LaneLog::kEntries - 1 + i, &got));
    EXPECT_EQ(got.name_hash, 100 + i);
  }
}

}  // namespace
}  // namespace kf
