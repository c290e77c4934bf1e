// The mailbox's store of early messages and Mailbox::forget(): the messages
// of an operation that ended here are dropped, kept or still to come, and
// a reader paused by a full store is told when forgetting makes room.
#include "transport/mailbox.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

#include "transport/transfer.h"

namespace kf {
namespace {

constexpr unsigned kShift = 24;  // an operation's messages: seq >> 24 (as the async engine)

FrameHeader frame(uint64_t name, uint64_t op, uint64_t part, uint64_t len) {
  FrameHeader h;
  h.type = FrameType::kData;
  h.epoch = 1;
  h.signature = 0x77;
  h.name_hash = name;
  h.seq = (op << kShift) | part;
  h.length = len;
  return h;
}

// Stores a whole early message of `len` bytes from rank 2.
void store(Mailbox* mb, const FrameHeader& h) {
  Mailbox::Incoming in = mb->begin(2, h);
  ASSERT_TRUE(in.stash);
  std::memset(in.stash->data.get(), 'x', h.length);
  ASSERT_TRUE(mb->finish(in).is_ok());
}

TEST(Mailbox, ForgetDropsTheKeptAndTheLaterMessagesOfAnOperation) {
  int spaces = 0;
  Mailbox mb(64, [&] { ++spaces; });
  store(&mb, frame(5, 3, 1, 40));  // operation 3 of name 5
  store(&mb, frame(5, 4, 0, 16));  // operation 4 of name 5
  store(&mb, frame(6, 3, 0, 8));   // operation 3 of another name
  EXPECT_EQ(mb.unexpected_bytes(), 64u);
  EXPECT_TRUE(mb.begin(2, frame(6, 9, 0, 8)).blocked);  // the store is full

  mb.forget(5, 3, kShift);
  EXPECT_EQ(mb.unexpected_bytes(), 24u);
  EXPECT_EQ(spaces, 1);  // the paused reader may go on
  // Another message of it (a signature, a partition started late) is read
  // and dropped; the other operations' messages are untouched.
  EXPECT_TRUE(mb.begin(2, frame(5, 3, 0xffffff, 8)).discard);
  std::vector<char> got(16);
  auto t = std::make_shared<Transfer>(Transfer::Kind::kRecv,
                                      MessageKey{2, 5, uint64_t(4) << kShift, 0, 0}, 0x77,
                                      got.data(), got.size());
  mb.post(t);
  EXPECT_TRUE(t->done());
  EXPECT_TRUE(t->status().is_ok());
  EXPECT_EQ(mb.unexpected_bytes(), 8u);
}

TEST(Mailbox, ForgetCountsOffAMessageStillArriving) {
  Mailbox mb(1 << 20, [] {});
  Mailbox::Incoming in = mb.begin(2, frame(5, 7, 0, 32));
  ASSERT_TRUE(in.stash);
  EXPECT_EQ(mb.unexpected_bytes(), 32u);
  mb.forget(5, 7, kShift);
  EXPECT_EQ(mb.unexpected_bytes(), 32u);  // its bytes are still being written
  ASSERT_TRUE(mb.finish(in).is_ok());
  EXPECT_EQ(mb.unexpected_bytes(), 0u);
}

TEST(Mailbox, ForgetRemembersTheLatestOperationsOnly) {
  Mailbox mb(1 << 20, [] {});
  for (uint64_t op = 0; op <= Mailbox::kForgottenOps; ++op) mb.forget(5, op, kShift);
  EXPECT_FALSE(mb.begin(2, frame(5, 0, 0, 8)).discard);  // the oldest is no longer known
  EXPECT_TRUE(mb.begin(2, frame(5, 1, 0, 8)).discard);
  EXPECT_TRUE(mb.begin(2, frame(5, Mailbox::kForgottenOps, 0, 8)).discard);
}

}  // namespace
}  // namespace kf
