#include "thread_peers.h"

#include <chrono>
#include <cstring>
#include <thread>

namespace kf {
namespace test {

namespace {

// peers.h only declares Transfer: each Peers implementation decides what a
// handle points to. This one hands out its Message through shared_ptr's
// aliasing constructor, so it never has to define kf::Transfer (which the
// library's engine may define differently).
TransferHandle to_handle(std::shared_ptr<ThreadWorld::Message> m) {
  auto* raw = reinterpret_cast<Transfer*>(m.get());
  return TransferHandle(std::move(m), raw);
}

ThreadWorld::Message* from_handle(const TransferHandle& t) {
  return reinterpret_cast<ThreadWorld::Message*>(t.get());
}

std::string key_text(int src, int dst, Tag tag) {
  return std::to_string(src) + "->" + std::to_string(dst) + " tag{" + std::to_string(tag.chunk) +
         "," + std::to_string(tag.step) + "}";
}

}  // namespace

std::shared_ptr<ThreadWorld::Message> ThreadWorld::post(int src, int dst, Tag tag, bool is_send,
                                                        void* buf, size_t len) {
  std::shared_ptr<Message> m;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (src < 0 || src >= size_ || dst < 0 || dst >= size_ || src == dst) {
      problems_.push_back("bad peer " + key_text(src, dst, tag));
      m = std::make_shared<Message>();
      m->done = true;
      m->status = invalid_argument("bad peer");
      return m;
    }
    const Key key{src, dst, tag.chunk, tag.step};
    if (used_.count({key, is_send}) != 0) {
      problems_.push_back(std::string(is_send ? "send" : "recv") +
                          " tag reused: " + key_text(src, dst, tag));
      auto dup = std::make_shared<Message>();
      dup->done = true;
      dup->status = invalid_usage("tag reused");
      return dup;
    }
    auto& slot = box_[key];
    if (!slot) slot = std::make_shared<Message>();
    m = slot;
    if (is_send ? m->send_posted : m->recv_posted) {
      problems_.push_back(std::string(is_send ? "send" : "recv") +
                          " posted twice: " + key_text(src, dst, tag));
      auto dup = std::make_shared<Message>();
      dup->done = true;
      dup->status = invalid_usage("tag reused");
      return dup;
    }
    if (is_send) {
      m->send_posted = true;
      m->sbuf = buf;
      m->slen = len;
    } else {
      m->recv_posted = true;
      m->rbuf = buf;
      m->rlen = len;
    }
    if (!(m->send_posted && m->recv_posted)) return m;
    box_.erase(key);
    used_.insert({key, true});
    used_.insert({key, false});
    // Copied under the lock: a rank that failed may return (freeing its
    // buffers) at any time, and cancel() must not race with a copy.
    if (m->cancelled) {
      m->status = aborted_error("peer cancelled " + key_text(src, dst, tag));
    } else if (m->slen != m->rlen) {
      m->status = invalid_usage("length mismatch " + key_text(src, dst, tag) + ": sent " +
                                std::to_string(m->slen) + ", expected " + std::to_string(m->rlen));
      problems_.push_back(m->status.message());
    } else if (m->slen > 0) {
      std::memcpy(m->rbuf, m->sbuf, m->slen);
    }
    m->done = true;
  }
  m->cv.notify_all();
  return m;
}

Status ThreadWorld::wait(Message& m) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!m.cv.wait_for(lock, std::chrono::milliseconds(timeout_ms_), [&] { return m.done; })) {
    return timeout_error("thread peers: transfer did not complete (deadlock?)");
  }
  return m.status;
}

bool ThreadWorld::test(Message& m, Status* st) {
  std::lock_guard<std::mutex> lock(mu_);
  if (m.done) *st = m.status;
  return m.done;
}

std::vector<Status> ThreadWorld::run(const std::function<Status(Peers&)>& fn) {
  std::vector<Status> out(static_cast<size_t>(size_));
  std::vector<std::thread> threads;
  for (int r = 0; r < size_; ++r) {
    threads.emplace_back([this, r, &fn, &out] {
      ThreadPeers peers(*this, r);
      out[static_cast<size_t>(r)] = fn(peers);
      // Like the engine: whatever a rank left pending when it returned (only
      // allowed after an error) is cancelled, so no copy lands in freed memory.
      if (!out[static_cast<size_t>(r)].is_ok()) cancel(r);
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

void ThreadWorld::cancel(int rank) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [key, m] : box_) {
    if (std::get<0>(key) == rank || std::get<1>(key) == rank) {
      m->cancelled = true;
      m->sbuf = nullptr;
      m->rbuf = nullptr;
      // The other side, if it already posted, fails now instead of timing out.
      m->done = true;
      m->status = aborted_error("peer cancelled the operation");
      m->cv.notify_all();
    }
  }
}

std::vector<std::string> ThreadWorld::problems() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out = problems_;
  for (const auto& [key, m] : box_) {
    out.push_back(
        std::string("unmatched ") + (m->send_posted ? "send " : "recv ") +
        key_text(std::get<0>(key), std::get<1>(key), Tag{std::get<2>(key), std::get<3>(key)}));
  }
  return out;
}

TransferHandle ThreadPeers::isend(int peer, Tag tag, const void* buf, size_t len) {
  return to_handle(w_.post(rank_, peer, tag, true, const_cast<void*>(buf), len));
}

TransferHandle ThreadPeers::irecv(int peer, Tag tag, void* buf, size_t len) {
  return to_handle(w_.post(peer, rank_, tag, false, buf, len));
}

Status ThreadPeers::wait(const TransferHandle& t) {
  if (!t) return internal_error("wait on a null handle");
  Status st = w_.wait(*from_handle(t));
  // Like the engine: on the first error, everything this rank still has
  // pending is cancelled before the algorithm unwinds and frees its scratch.
  if (!st.is_ok()) w_.cancel(rank_);
  return st;
}

bool ThreadPeers::test(const TransferHandle& t, Status* st) {
  if (!t) {
    *st = internal_error("test of a null handle");
    return true;
  }
  if (!w_.test(*from_handle(t), st)) return false;
  if (!st->is_ok()) w_.cancel(rank_);  // as wait() does
  return true;
}

}  // namespace test
}  // namespace kf
