// Held TCP sends (TcpTransport::send with hold): two ranks of one process
// over loopback. A held frame is not lost: it leaves with the next frame to
// the same peer (in order), at flush_held(), or, with neither, at a turn of
// the progress thread (at most kPingMs).
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "transport/mailbox.h"
#include "transport/tcp/tcp_transport.h"
#include "transport/transfer.h"

namespace kf {
namespace {

constexpr uint64_t kName = 0x5eed;
constexpr int64_t kWaitMs = 5000;  // a hang fails fast; the progress thread's turn is 500 ms

// Rank 0 and rank 1 connected over 127.0.0.1, each with its own mailbox.
class TcpPair : public ::testing::Test {
 protected:
  void SetUp() override {
    TcpOptions o;
    o.size = 2;
    o.epoch = 1;
    o.secret.fill(7);
    for (int r = 0; r < 2; ++r) {
      o.rank = r;
      tcp_[r] = std::make_unique<TcpTransport>(o, &mailbox_[r], [](int, const Status&) {});
      ASSERT_TRUE(tcp_[r]->listen("127.0.0.1").is_ok());
    }
    const std::vector<std::string> addresses = {tcp_[0]->address(), tcp_[1]->address()};
    const Deadline d = Deadline::after_ms(kWaitMs);
    Status st0;
    std::thread accept([&] { st0 = tcp_[0]->connect_all(addresses, d); });
    Status st1 = tcp_[1]->connect_all(addresses, d);
    accept.join();
    ASSERT_TRUE(st0.is_ok()) << st0.message();
    ASSERT_TRUE(st1.is_ok()) << st1.message();
  }

  // Rank 0 sends `text` as frame `seq` to rank 1.
  TransferHandle send(uint64_t seq, const std::string& text, bool hold) {
    FrameHeader h;
    h.type = FrameType::kData;
    h.epoch = 1;
    h.name_hash = kName;
    h.seq = seq;
    h.length = text.size();
    payloads_.push_back(std::make_unique<std::string>(text));
    auto t = std::make_shared<Transfer>(Transfer::Kind::kSend, MessageKey{1, kName, seq, 0, 0}, 0,
                                        payloads_.back()->data(), text.size());
    tcp_[0]->send(t, h, hold);
    return t;
  }

  // Rank 1's receive of frame `seq`, posted.
  TransferHandle post(uint64_t seq, std::vector<char>* buf) {
    auto t = std::make_shared<Transfer>(Transfer::Kind::kRecv, MessageKey{0, kName, seq, 0, 0}, 0,
                                        buf->data(), buf->size());
    mailbox_[1].post(t);
    return t;
  }

  Mailbox mailbox_[2] = {Mailbox(64 << 20, [] {}), Mailbox(64 << 20, [] {})};
  std::unique_ptr<TcpTransport> tcp_[2];  // destroyed before the mailboxes
  std::vector<std::unique_ptr<std::string>> payloads_;
};

TEST_F(TcpPair, HeldFrameLeavesWithTheNextFrameInOrder) {
  std::vector<char> a(5), b(3);
  TransferHandle ra = post(1, &a), rb = post(2, &b);
  send(1, "start", /*hold=*/true);
  send(2, "dat", /*hold=*/false);
  ASSERT_TRUE(ra->wait(Deadline::after_ms(kWaitMs)).is_ok());
  ASSERT_TRUE(rb->wait(Deadline::after_ms(kWaitMs)).is_ok());
  EXPECT_EQ(std::string(a.data(), a.size()), "start");
  EXPECT_EQ(std::string(b.data(), b.size()), "dat");
}

TEST_F(TcpPair, FlushHeldSendsHeldFrames) {
  std::vector<char> a(4);
  TransferHandle ra = post(1, &a);
  TransferHandle s = send(1, "held", /*hold=*/true);
  tcp_[0]->flush_held();
  // Written by flush_held() (or by the progress thread at its turn, which
  // may have taken the frame first): a send completes when the kernel has
  // its bytes.
  ASSERT_TRUE(s->wait(Deadline::after_ms(kWaitMs)).is_ok());
  ASSERT_TRUE(ra->wait(Deadline::after_ms(kWaitMs)).is_ok());
  EXPECT_EQ(std::string(a.data(), a.size()), "held");
}

TEST_F(TcpPair, HeldFrameLeavesWithoutAFlush) {
  std::vector<char> a(4);
  TransferHandle ra = post(1, &a);
  send(1, "late", /*hold=*/true);
  Status st = ra->wait(Deadline::after_ms(kWaitMs));
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(std::string(a.data(), a.size()), "late");
}

}  // namespace
}  // namespace kf
