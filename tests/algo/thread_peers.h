// An in-process Peers implementation over threads, for testing the
// algorithms without a transport. One ThreadWorld holds the mailboxes of all
// ranks; each rank's thread uses its own ThreadPeers.
//
// The semantics are deliberately strict: a message is copied only when both
// its send and its receive are posted (rendezvous, no buffering), and the
// send completes only then. An algorithm that waits on a send before posting
// the receive its peer needs therefore deadlocks here (reported as a
// timeout), and one that changes a send buffer before wait() corrupts data.
// Reusing a (peer, tag) pair or mismatched lengths are reported as errors.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "algo/peers.h"

namespace kf {
namespace test {

class ThreadWorld {
 public:
  explicit ThreadWorld(int size, int timeout_ms = 20000) : size_(size), timeout_ms_(timeout_ms) {}

  int size() const { return size_; }

  // Runs fn(peers) on `size` threads, one per rank, and returns each rank's
  // status. Afterwards problems() lists protocol errors (unmatched messages,
  // reused tags, length mismatches).
  std::vector<Status> run(const std::function<Status(Peers&)>& fn);

  std::vector<std::string> problems();

  // Cancels every pending message of `rank` (after it returned an error).
  void cancel(int rank);

  // Used by ThreadPeers.
  struct Message;
  std::shared_ptr<Message> post(int src, int dst, Tag tag, bool is_send, void* buf, size_t len);
  Status wait(Message& m);
  bool test(Message& m, Status* st);

 private:
  using Key = std::tuple<int, int, uint32_t, uint32_t>;
  const int size_;
  const int timeout_ms_;
  std::mutex mu_;
  std::map<Key, std::shared_ptr<Message>> box_;
  std::set<std::pair<Key, bool>> used_;  // (key, is_send) already matched
  std::vector<std::string> problems_;
};

struct ThreadWorld::Message {
  bool send_posted = false;
  bool recv_posted = false;
  const void* sbuf = nullptr;
  size_t slen = 0;
  void* rbuf = nullptr;
  size_t rlen = 0;
  bool done = false;
  bool cancelled = false;
  std::condition_variable cv;  // waited on with the world's mutex
  Status status;
};

class ThreadPeers final : public Peers {
 public:
  ThreadPeers(ThreadWorld& w, int rank) : w_(w), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return w_.size(); }
  TransferHandle isend(int peer, Tag tag, const void* buf, size_t len) override;
  TransferHandle irecv(int peer, Tag tag, void* buf, size_t len) override;
  Status wait(const TransferHandle& t) override;
  bool test(const TransferHandle& t, Status* st) override;

 private:
  ThreadWorld& w_;
  int rank_;
};

}  // namespace test
}  // namespace kf
