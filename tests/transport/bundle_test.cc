// Bundles (transport/bundle.h): encoding, the validating decoder, and the
// mailbox delivering a bundle's frames into posted receives and the store.
#include "transport/bundle.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "transport/mailbox.h"
#include "transport/transfer.h"

namespace kf {
namespace {

constexpr uint32_t kEpoch = 7;

FrameHeader data_frame(uint64_t name, uint64_t seq, uint32_t step, uint64_t len) {
  FrameHeader h;
  h.type = FrameType::kData;
  h.epoch = kEpoch;
  h.signature = 0x1234;
  h.name_hash = name;
  h.seq = seq;
  h.chunk = 0;
  h.step = step;
  h.length = len;
  return h;
}

std::vector<char> payload(size_t n, char first) {
  std::vector<char> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<char>(first + i);
  return p;
}

struct Seen {
  FrameHeader h;
  std::vector<char> data;
};

Status decode(const std::vector<char>& b, std::vector<Seen>* out, uint32_t epoch = kEpoch) {
  return bundle_for_each(b.data(), b.size(), epoch, [&](const FrameHeader& h, const char* p) {
    out->push_back(Seen{h, std::vector<char>(p, p + h.length)});
  });
}

TEST(Bundle, RoundTripKeepsOrderHeadersAndPayloads) {
  std::vector<char> b;
  std::vector<std::vector<char>> sent;
  for (int i = 0; i < 5; ++i) {
    sent.push_back(payload(static_cast<size_t>(i * 3), static_cast<char>('a' + i)));
    bundle_append(&b, data_frame(100 + i, i, i == 4 ? kControlStepFirst : 0, sent.back().size()),
                  sent.back().data());
  }
  std::vector<Seen> got;
  ASSERT_TRUE(decode(b, &got).is_ok());
  ASSERT_EQ(got.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(got[i].h.name_hash, 100u + i);
    EXPECT_EQ(got[i].h.seq, static_cast<uint64_t>(i));
    EXPECT_EQ(got[i].h.signature, 0x1234u);
    EXPECT_EQ(got[i].data, sent[i]);
  }
  std::vector<Seen> none;
  EXPECT_TRUE(decode(std::vector<char>(), &none).is_ok());
  EXPECT_TRUE(none.empty());
}

// Every defect is found before anything is delivered.
TEST(Bundle, MalformedBundlesDeliverNothing) {
  std::vector<char> good;
  auto p = payload(16, 'x');
  bundle_append(&good, data_frame(1, 0, 0, p.size()), p.data());
  bundle_append(&good, data_frame(2, 0, 0, p.size()), p.data());

  auto expect_bad = [](const std::vector<char>& b, const char* word, uint32_t epoch = kEpoch) {
    std::vector<Seen> got;
    Status st = decode(b, &got, epoch);
    EXPECT_EQ(st.code(), KF_ERR_REMOTE) << word;
    EXPECT_NE(st.message().find(word), std::string::npos) << st.message();
    EXPECT_TRUE(got.empty()) << word;
  };
  // Cut inside the second header, and inside the second payload.
  expect_bad(std::vector<char>(good.begin(), good.end() - 16 - 10), "truncated header");
  expect_bad(std::vector<char>(good.begin(), good.end() - 1), "runs past the end");
  // Garbage magic in the second frame.
  std::vector<char> bad = good;
  bad[kFrameHeaderBytes + 16] ^= 0x55;
  expect_bad(bad, "magic");
  // A huge announced length.
  std::vector<char> huge;
  bundle_append(&huge, data_frame(1, 0, 0, 0), nullptr);
  FrameHeader h = data_frame(1, 0, 0, uint64_t(1) << 39);
  encode_frame_header(h, reinterpret_cast<uint8_t*>(huge.data()));
  expect_bad(huge, "runs past the end");
  // A bundle in a bundle, a control frame, another epoch.
  std::vector<char> nested;
  bundle_append(&nested, data_frame(1, 0, kBundleStep, 0), nullptr);
  expect_bad(nested, "bundle inside a bundle");
  std::vector<char> ping(kFrameHeaderBytes);
  FrameHeader ph;
  ph.type = FrameType::kPing;
  ph.epoch = kEpoch;
  encode_frame_header(ph, reinterpret_cast<uint8_t*>(ping.data()));
  expect_bad(ping, "not a data frame");
  expect_bad(good, "epoch", kEpoch + 1);
}

// The mailbox takes a bundle whole, then delivers each frame: into a posted
// receive, or into the store for a receive posted later.
TEST(Bundle, MailboxDeliversIntoPostedReceivesAndTheStore) {
  int spaces = 0;
  Mailbox mb(1 << 20, [&] { ++spaces; });
  const int src = 3;
  auto early = payload(24, 'e');
  auto late = payload(40, 'l');
  std::vector<char> b;
  bundle_append(&b, data_frame(11, 5, 0, early.size()), early.data());
  bundle_append(&b, data_frame(12, 6, 2, late.size()), late.data());

  MessageKey k1{src, 11, 5, 0, 0};
  std::vector<char> got1(early.size());
  auto t1 = std::make_shared<Transfer>(Transfer::Kind::kRecv, k1, 0x1234, got1.data(), got1.size());
  int heard = 0;
  t1->set_listener([&] { ++heard; });
  mb.post(t1);

  FrameHeader outer = data_frame(99, 0, kBundleStep, b.size());
  Mailbox::Incoming in = mb.begin(src, outer);
  ASSERT_TRUE(in.error.is_ok());
  ASSERT_FALSE(in.blocked || in.discard || in.target);
  ASSERT_TRUE(in.stash);
  std::memcpy(in.stash->data.get(), b.data(), b.size());
  ASSERT_TRUE(mb.finish(in).is_ok());

  ASSERT_TRUE(t1->done());
  EXPECT_TRUE(t1->status().is_ok());
  EXPECT_EQ(got1, early);
  EXPECT_EQ(heard, 1);                            // the listener ran once, on completion
  EXPECT_EQ(mb.unexpected_bytes(), late.size());  // only the unclaimed frame is stored

  MessageKey k2{src, 12, 6, 0, 2};
  std::vector<char> got2(late.size());
  auto t2 = std::make_shared<Transfer>(Transfer::Kind::kRecv, k2, 0x1234, got2.data(), got2.size());
  mb.post(t2);
  ASSERT_TRUE(t2->done());
  EXPECT_EQ(got2, late);
  EXPECT_EQ(mb.unexpected_bytes(), 0u);
  EXPECT_EQ(spaces, 0);  // no reader was paused: nobody to wake
}

TEST(Bundle, MailboxRefusesAMalformedBundle) {
  Mailbox mb(1 << 20, [] {});
  std::vector<char> b;
  auto p = payload(8, 'p');
  bundle_append(&b, data_frame(1, 0, 0, p.size()), p.data());
  b.pop_back();  // payload runs past the end
  MessageKey k{1, 1, 0, 0, 0};
  std::vector<char> got(p.size());
  auto t = std::make_shared<Transfer>(Transfer::Kind::kRecv, k, 0x1234, got.data(), got.size());
  mb.post(t);
  Mailbox::Incoming in = mb.begin(1, data_frame(99, 0, kBundleStep, b.size()));
  ASSERT_TRUE(in.stash);
  std::memcpy(in.stash->data.get(), b.data(), b.size());
  Status st = mb.finish(in);
  EXPECT_EQ(st.code(), KF_ERR_REMOTE);
  EXPECT_NE(st.message().find("malformed bundle from rank 1"), std::string::npos) << st.message();
  EXPECT_FALSE(t->done());  // nothing delivered; the stream is dropped by the transport
  EXPECT_EQ(mb.unexpected_bytes(), 0u);
}

// A full store pauses the stream before a bundle, as before any early message.
TEST(Bundle, MailboxPausesABundleWhenTheStoreIsFull) {
  int spaces = 0;
  Mailbox mb(64, [&] { ++spaces; });
  auto big = payload(60, 'b');
  Mailbox::Incoming first = mb.begin(2, data_frame(5, 0, 0, big.size()));
  ASSERT_TRUE(first.stash);
  std::memcpy(first.stash->data.get(), big.data(), big.size());
  ASSERT_TRUE(mb.finish(first).is_ok());
  std::vector<char> b;
  bundle_append(&b, data_frame(6, 0, 0, big.size()), big.data());
  Mailbox::Incoming in = mb.begin(2, data_frame(99, 0, kBundleStep, b.size()));
  EXPECT_TRUE(in.blocked);
  EXPECT_EQ(spaces, 0);
  // A receive that takes the stored message makes room: the paused reader
  // is told, once.
  std::vector<char> got(big.size());
  auto t = std::make_shared<Transfer>(Transfer::Kind::kRecv, MessageKey{2, 5, 0, 0, 0}, 0x1234,
                                      got.data(), got.size());
  mb.post(t);
  EXPECT_TRUE(t->done());
  EXPECT_EQ(spaces, 1);
  auto t2 = std::make_shared<Transfer>(Transfer::Kind::kRecv, MessageKey{2, 6, 0, 0, 0}, 0x1234,
                                       got.data(), got.size());
  mb.post(t2);
  EXPECT_EQ(spaces, 1);
  mb.cancel(t2, aborted_error("test over"));
}

}  // namespace
}  // namespace kf
