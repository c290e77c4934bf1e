#include "transport/mailbox.h"

#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "base/log.h"
#include "transport/bundle.h"

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
  if (signature != t.signature() && t.key().step < kControlStepFirst) {
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

Status Mailbox::new_stash_locked(const MessageKey& key, const FrameHeader& h,
                                 std::shared_ptr<Stash>* out) {
  const bool bundle = h.step == kBundleStep;
  auto s = std::make_shared<Stash>();
  s->key = key;
  s->signature = h.signature;
  s->len = h.length;
  s->bundle = bundle;
  s->epoch = h.epoch;
  // No exception may escape a progress thread: a frame announcing more than
  // we can allocate fails the connection instead.
  s->data.reset(new (std::nothrow) char[h.length > 0 ? h.length : 1]);
  if (!s->data) {
    return remote_error(std::string("cannot buffer ") + (bundle ? "a bundle" : "an early message") +
                        " of " + std::to_string(h.length) + " bytes from rank " +
                        std::to_string(key.peer) + ": out of memory");
  }
  unexpected_bytes_ += h.length;
  if (!bundle) unexpected_[key] = s;  // a bundle is unpacked by finish(), never matched
  *out = std::move(s);
  return Status::ok();
}

bool Mailbox::full_locked(uint64_t len) {
  if (unexpected_bytes_ == 0 || unexpected_bytes_ + len <= limit_bytes_) return false;
  blocked_ = true;
  return true;
}

bool Mailbox::take_blocked_locked() {
  const bool was = blocked_;
  blocked_ = false;
  return was;
}

Mailbox::Incoming Mailbox::begin(int src, const FrameHeader& h) {
  if (h.step == kBundleStep) return begin_bundle(src, h);
  if (h.step >= kControlStepFirst && control_hook_ && control_hook_(src, h)) {
    Incoming in;
    in.discard = true;
    return in;
  }
  std::unique_lock<std::mutex> lock(mu_);
  return place_locked(src, h, true, &lock);
}

// Where a frame goes, the control hook aside (caller holds mu_ through
// `lock`; it may come back released, after a cancel).
Mailbox::Incoming Mailbox::place_locked(int src, const FrameHeader& h, bool may_block,
                                        std::unique_lock<std::mutex>* lock) {
  const MessageKey key = key_of(src, h);
  Incoming in;
  auto it = posted_.find(key);
  if (it != posted_.end()) {
    TransferHandle t = it->second;
    posted_.erase(it);
    std::string why = mismatch(*t, h.signature, h.length);
    if (why.empty()) {
      in.target = t;
    } else {
      // Outside the lock: a cancelled transfer runs its listeners, which
      // take engine locks (the mailbox's lock is always the innermost).
      lock->unlock();
      t->cancel(invalid_usage(why));
      in.discard = true;
    }
    return in;
  }
  if (forgotten_locked(key)) {
    in.discard = true;  // of an operation that failed here already
    return in;
  }
  if (unexpected_.count(key) != 0) {
    // Two frames with one key: a peer broke the protocol (or two names hash
    // alike). Keep the first; drop this one.
    KF_LOG_WARN("dropping a duplicate message (" + describe(key) + ")");
    in.discard = true;
    return in;
  }
  if (may_block && full_locked(h.length)) {
    in.blocked = true;
    return in;
  }
  in.error = new_stash_locked(key, h, &in.stash);
  return in;
}

// A bundle is read whole into a buffer of its own, then unpacked by
// finish(). It counts against the store's limit while it is read (a full
// store pauses the stream, as for any early message), and its frames join
// the store as they are unpacked.
Mailbox::Incoming Mailbox::begin_bundle(int src, const FrameHeader& h) {
  Incoming in;
  std::lock_guard<std::mutex> lock(mu_);
  if (full_locked(h.length)) {
    in.blocked = true;
    return in;
  }
  in.error = new_stash_locked(key_of(src, h), h, &in.stash);
  return in;
}

Status Mailbox::finish_bundle(const Stash& b) {
  const int src = b.key.peer;
  Status delivered;
  Status st =
      bundle_for_each(b.data.get(), b.len, b.epoch, [&](const FrameHeader& h, const char* payload) {
        Status d = deliver(src, h, payload);
        if (delivered.is_ok()) delivered = d;
      });
  bool wake;
  {
    std::lock_guard<std::mutex> lock(mu_);
    unexpected_bytes_ -= b.len;
    wake = take_blocked_locked();
  }
  if (wake) on_space_();
  if (!st.is_ok()) {
    return remote_error("malformed bundle from rank " + std::to_string(src) + ": " + st.message());
  }
  return delivered;
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

Status Mailbox::finish(const Incoming& in) {
  if (in.target) {
    in.target->complete(Status::ok());
    return Status::ok();
  }
  if (in.stash->bundle) return finish_bundle(*in.stash);
  TransferHandle claimer;
  bool wake = false;
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
      wake = take_blocked_locked();
    }
  }
  if (claimer) fill_from_stash(claimer, *in.stash);
  if (wake) on_space_();
  return Status::ok();
}

void Mailbox::post(const TransferHandle& t) {
  t->set_spin_us(recv_spin_us_.load(std::memory_order_relaxed));
  t->set_driver(recv_driver_.load(std::memory_order_acquire));
  std::shared_ptr<Stash> ready;
  Status gone;
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = unexpected_.find(t->key());
    auto dep = it == unexpected_.end() ? departed_.find(t->key().peer) : departed_.end();
    if (dep == departed_.end()) wake = take_blocked_locked();
    if (dep != departed_.end()) {
      gone = dep->second;
    } else if (it == unexpected_.end()) {
      posted_[t->key()] = t;
    } else if (!it->second->complete) {
      it->second->claimer = t;
    } else {
      ready = it->second;
      unexpected_.erase(it);
      unexpected_bytes_ -= ready->len;
    }
  }
  if (!gone.is_ok()) {
    t->cancel(gone);
    return;
  }
  if (ready) fill_from_stash(t, *ready);
  if (wake) on_space_();
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

bool Mailbox::forgotten_locked(const MessageKey& key) const {
  return !forgotten_.empty() && forgotten_.count({key.name_hash, key.seq >> forget_shift_}) != 0;
}

void Mailbox::forget(uint64_t name_hash, uint64_t op, unsigned shift) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    forget_shift_ = shift;
    const std::pair<uint64_t, uint64_t> key{name_hash, op};
    if (!forgotten_.insert(key).second) return;
    keep_latest(&forgotten_, &forgotten_order_, key, kForgottenOps);
    for (auto it = unexpected_.begin(); it != unexpected_.end();) {
      const Stash& s = *it->second;
      if (s.key.name_hash != name_hash || (s.key.seq >> shift) != op) {
        ++it;
        continue;
      }
      // One still arriving is counted off by finish(), as an orphan.
      if (s.complete) {
        unexpected_bytes_ -= s.len;
        wake = true;
      }
      it = unexpected_.erase(it);
    }
    wake = wake && take_blocked_locked();
  }
  if (wake) on_space_();
}

Status Mailbox::deliver(int src, const FrameHeader& h, const void* data) {
  Incoming in = begin(src, h);
  if (in.blocked) {
    // Never held back: a local sender would wait for itself, and a
    // bundle's bytes have been read from the stream already. Placed anew:
    // a receive may have been posted (or the operation forgotten) since.
    std::unique_lock<std::mutex> lock(mu_);
    in = place_locked(src, h, false, &lock);
  }
  KF_RETURN_IF_ERROR(in.error);
  if (in.discard) return Status::ok();
  if (in.target) {
    std::lock_guard<std::mutex> io(in.target->io_mutex());
    if (!in.target->cancelled() && h.length > 0) std::memcpy(in.target->buffer(), data, h.length);
  } else if (h.length > 0) {
    std::memcpy(in.stash->data.get(), data, h.length);
  }
  return finish(in);
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

void Mailbox::peer_departed(int peer, const Status& why) {
  std::vector<TransferHandle> victims;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int p : indirect_) {
      if (p == peer) return;
    }
    departed_.emplace(peer, why);
    for (auto it = posted_.begin(); it != posted_.end();) {
      if (it->first.peer == peer) {
        victims.push_back(std::move(it->second));
        it = posted_.erase(it);
      } else {
        ++it;
      }
    }
    // A stash still arriving from this peer cannot exist: its frame came
    // before the goodbye on the same stream and is complete.
  }
  for (auto& t : victims) t->cancel(why);
}

void Mailbox::set_indirect_peers(std::vector<int> peers) {
  std::lock_guard<std::mutex> lock(mu_);
  indirect_ = std::move(peers);
}

size_t Mailbox::unexpected_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return unexpected_bytes_;
}

}  // namespace kf
