// Held TCP sends (TcpTransport::send with hold): two ranks of one process
// over loopback. A held frame is not lost: it leaves with the next frame to
// the same peer, at flush_held(), or, with neither, at a turn of the
// progress thread (at most kPingMs). (That it waits at all is not asserted:
// only a clock could tell, and the progress thread may take it any time.)
#include <gtest/gtest.h>

#include <cstring>
#include <map>
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

  // Rank 1's receive of frame `seq` into a buffer of `len` bytes, posted;
  // received(seq) is its content.
  TransferHandle post(uint64_t seq, size_t len) {
    auto& buf = received_[seq];
    buf.assign(len, '\0');
    auto t = std::make_shared<Transfer>(Transfer::Kind::kRecv, MessageKey{0, kName, seq, 0, 0}, 0,
                                        &buf[0], len);
    mailbox_[1].post(t);
    return t;
  }
  const std::string& received(uint64_t seq) { return received_[seq]; }

  // Buffers first: a failed test may leave transfers into them, which the
  // transports (destroyed first, in reverse order) must not outlive.
  std::vector<std::unique_ptr<std::string>> payloads_;
  std::map<uint64_t, std::string> received_;
  Mailbox mailbox_[2] = {Mailbox(64 << 20, [] {}), Mailbox(64 << 20, [] {})};
  std::unique_ptr<TcpTransport> tcp_[2];
};

TEST_F(TcpPair, HeldFrameLeavesWithTheNextFrame) {
  TransferHandle ra = post(1, 5), rb = post(2, 3);
  send(1, "start", /*hold=*/true);
  send(2, "dat", /*hold=*/false);
  ASSERT_TRUE(ra->wait(Deadline::after_ms(kWaitMs)).is_ok());
  ASSERT_TRUE(rb->wait(Deadline::after_ms(kWaitMs)).is_ok());
  EXPECT_EQ(received(1), "start");
  EXPECT_EQ(received(2), "dat");
}

TEST_F(TcpPair, FlushHeldSendsHeldFrames) {
  TransferHandle ra = post(1, 4);
  TransferHandle s = send(1, "held", /*hold=*/true);
  tcp_[0]->flush_held();
  // Written by flush_held() (or by the progress thread at its turn, which
  // may have taken the frame first): a send completes when the kernel has
  // its bytes.
  ASSERT_TRUE(s->wait(Deadline::after_ms(kWaitMs)).is_ok());
  ASSERT_TRUE(ra->wait(Deadline::after_ms(kWaitMs)).is_ok());
  EXPECT_EQ(received(1), "held");
}

TEST_F(TcpPair, HeldFrameLeavesWithoutAFlush) {
  TransferHandle ra = post(1, 4);
  send(1, "late", /*hold=*/true);
  Status st = ra->wait(Deadline::after_ms(kWaitMs));
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(received(1), "late");
}

}  // namespace
}  // namespace kf
