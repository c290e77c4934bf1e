#include "transport/mailbox.h"

#include <cstring>
#include <string>
#include <vector>

namespace kf {
namespace {

MessageKey key_of(int src, const FrameHeader& h) {
  MessageKey k;
  k.peer = src;
  k.name_hash = h.name_hash;
  k.seq = h.seq;
  k.chunk = h.chunk;
  k.step = h.step;
  return k;
}

std::string describe(const MessageKey& k) {
  return "seq " + std::to_string(k.seq) + " chunk " + std::to_string(k.chunk) + " step " +
         std::to_string(k.step) + " from rank " + std::to_string(k.peer);
}

// Why a posted receive cannot take a message; empty if it can.
std::string mismatch(const Transfer& t, uint32_t signature, size_t len) {
  if (signature != t.signature()) {
    return "rank " + std::to_string(t.key().peer) +
           " called this operation with different arguments (count, dtype, op or root)";
  }
  if (len != t.length()) {
    return "rank " + std::to_string(t.key().peer) + " sent " + std::to_string(len) +
           " bytes where " + std::to_string(t.length()) + " were expected (" + describe(t.key()) +
           ")";
  }
  return "";
}

}  // namespace

Mailbox::Mailbox(size_t limit_bytes, std::function<void()> on_space)
    : limit_bytes_(limit_bytes), on_space_(std::move(on_space)) {}

Mailbox::Incoming Mailbox::begin(int src, const FrameHeader& h) {
  MessageKey key = key_of(src, h);
  Incoming in;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = posted_.find(key);
  if (it != posted_.end()) {
    TransferHandle t = it->second;
    std::string why = mismatch(*t, h.signature, h.length);
    if (why.empty()) {
      posted_.erase(it);
      in.target = t;
      return in;
    }
    // The payload is drained into a stash that nobody claims.
    posted_.erase(it);
    t->cancel(invalid_usage(why));
  } else if (unexpected_bytes_ > 0 && unexpected_bytes_ + h.length > limit_bytes_) {
    in.blocked = true;
    return in;
  }
  auto s = std::make_shared<Stash>();
  s->key = key;
  s->signature = h.signature;
  s->len = h.length;
  s->data.reset(new char[h.length > 0 ? h.length : 1]);
  unexpected_bytes_ += h.length;
  if (it == posted_.end()) unexpected_[key] = s;
  in.stash = s;
  return in;
}

void Mailbox::fill_from_stash(const TransferHandle& t, Stash& s) {
  std::string why = mismatch(*t, s.signature, s.len);
  if (!why.empty()) {
    t->cancel(invalid_usage(why));
    return;
  }
  {
    std::lock_guard<std::mutex> io(t->io_mutex());
    if (t->cancelled()) return;
    if (s.len > 0) std::memcpy(t->buffer(), s.data.get(), s.len);
  }
  t->complete(Status::ok());
}

void Mailbox::finish(const Incoming& in) {
  if (in.target) {
    in.target->complete(Status::ok());
    return;
  }
  TransferHandle claimer;
  bool shrunk = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    in.stash->complete = true;
    claimer = std::move(in.stash->claimer);
    auto it = unexpected_.find(in.stash->key);
    bool tracked = it != unexpected_.end() && it->second == in.stash;
    if (claimer || !tracked) {
      // Claimed while arriving, or an orphan (a mismatched frame): not kept.
      if (tracked) unexpected_.erase(it);
      unexpected_bytes_ -= in.stash->len;
      shrunk = true;
    }
  }
  if (claimer) fill_from_stash(claimer, *in.stash);
  if (shrunk) on_space_();
}

void Mailbox::post(const TransferHandle& t) {
  std::shared_ptr<Stash> ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = unexpected_.find(t->key());
    if (it == unexpected_.end()) {
      posted_[t->key()] = t;
    } else if (!it->second->complete) {
      it->second->claimer = t;
    } else {
      ready = it->second;
      unexpected_.erase(it);
      unexpected_bytes_ -= ready->len;
    }
  }
  if (ready) fill_from_stash(t, *ready);
  on_space_();
}

void Mailbox::cancel(const TransferHandle& t, const Status& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = posted_.find(t->key());
    if (it != posted_.end() && it->second == t) posted_.erase(it);
    auto u = unexpected_.find(t->key());
    if (u != unexpected_.end() && u->second->claimer == t) u->second->claimer.reset();
  }
  t->cancel(why);
}

void Mailbox::deliver_local(int self, const FrameHeader& h, const void* data) {
  Incoming in = begin(self, h);
  // A local message is never blocked: the sender is this process and waits for it.
  if (in.blocked) {
    std::lock_guard<std::mutex> lock(mu_);
    auto s = std::make_shared<Stash>();
    s->key = key_of(self, h);
    s->signature = h.signature;
    s->len = h.length;
    s->data.reset(new char[h.length > 0 ? h.length : 1]);
    unexpected_bytes_ += h.length;
    unexpected_[s->key] = s;
    in.blocked = false;
    in.stash = s;
  }
  if (in.target) {
    std::lock_guard<std::mutex> io(in.target->io_mutex());
    if (!in.target->cancelled() && h.length > 0) std::memcpy(in.target->buffer(), data, h.length);
  } else if (h.length > 0) {
    std::memcpy(in.stash->data.get(), data, h.length);
  }
  finish(in);
}

void Mailbox::fail_all(const Status& why) {
  std::vector<TransferHandle> victims;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& kv : posted_) victims.push_back(kv.second);
    posted_.clear();
    for (auto& kv : unexpected_) {
      if (kv.second->claimer) victims.push_back(std::move(kv.second->claimer));
    }
  }
  for (auto& t : victims) t->cancel(why);
}

size_t Mailbox::unexpected_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return unexpected_bytes_;
}

}  // namespace kf
