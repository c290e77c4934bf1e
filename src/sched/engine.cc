#include "sched/engine.h"

#include "base/config.h"
#include "base/log.h"
#include "sched/op_peers.h"
#include "transport/frame.h"

namespace kf {

uint32_t OpSignature::digest() const {
  // A multiply-and-fold per field, not per byte: every blocking arena call
  // and every lane pass computes it (per operation of a fused pass).
  uint64_t h = 0x243f6a8885a308d3ull;
  auto mix = [&h](uint64_t v) {
    h = (h ^ v) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
  };
  mix(kind);
  mix(count);
  mix(static_cast<uint64_t>(static_cast<int64_t>(dtype)));
  mix(static_cast<uint64_t>(static_cast<int64_t>(op)));
  mix(static_cast<uint64_t>(static_cast<int64_t>(root)));
  return static_cast<uint32_t>(h ^ (h >> 32));
}

Engine::Engine(const EngineOptions& opts)
    : opts_(opts), mailbox_(static_cast<size_t>(knob_int(Knob::KF_UNEXPECTED_BYTES)), [this] {
        if (TcpTransport* t = tcp()) t->retry_paused();
      }) {}

uint64_t Engine::next_seq(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  return seqs_[name]++;
}

Status Engine::health() const {
  std::lock_guard<std::mutex> lock(mu_);
  return broken_;
}

void Engine::break_with(const Status& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!broken_.is_ok()) return;
    broken_ = why;
  }
  mailbox_.fail_all(why);
  if (ShmTransport* shm = shm_.load()) shm->fail_all(why);
  if (on_break_) on_break_(why);
}

void Engine::on_peer_lost(int peer, const Status& why) { break_with(why); }

Status Engine::refuse(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  if (broken_.is_ok()) return Status::ok();
  const std::string text =
      "the communicator is broken and cannot run '" + name + "': " + broken_.message();
  if (cause_reported_) return aborted_error(text);
  cause_reported_ = true;
  return Status(broken_.code(), text);
}

void Engine::cause_reported() {
  std::lock_guard<std::mutex> lock(mu_);
  cause_reported_ = true;
}

void Engine::flush_held() {
  if (TcpTransport* t = tcp()) t->flush_held();
}

Status Engine::run(const std::string& name, const OpSignature& sig, const Body& body) {
  KF_RETURN_IF_ERROR(refuse(name));
  uint64_t seq = next_seq(name);
  OpPeers peers(this, name, hash_name(name.data(), name.size()), seq, sig.digest(),
                Deadline::after_ms(opts_.timeout_ms));
  Status st = body(peers);
  if (!st.is_ok()) {
    peers.withdraw_outstanding(st);
    if (st.code() == KF_ERR_REMOTE || st.code() == KF_ERR_TIMEOUT) {
      break_with(st);
      cause_reported();  // this return carries it
    }
    // Prefer the root cause: a receive failed by a lost peer carries its name.
    Status broken = health();
    if (st.code() == KF_ERR_TIMEOUT && !broken.is_ok() && broken.message() != st.message()) {
      return Status(broken.code(), st.message() + "; " + broken.message());
    }
  }
  return st;
}

}  // namespace kf
