#include "sched/op_peers.h"

#include <algorithm>

#include "sched/engine.h"
#include "sched/fusion.h"

namespace kf {

OpPeers::OpPeers(Engine* engine, std::string name, uint64_t name_hash, uint64_t seq,
                 uint32_t signature, const Deadline& deadline)
    : engine_(engine), name_(std::move(name)), name_hash_(name_hash), seq_(seq),
      signature_(signature), deadline_(deadline), display_seq_(seq) {}

int OpPeers::rank() const { return engine_->rank(); }
int OpPeers::size() const { return engine_->size(); }

MessageKey OpPeers::key(int peer, Tag tag) const {
  MessageKey k;
  k.peer = peer;
  k.name_hash = name_hash_;
  k.seq = seq_;
  k.chunk = tag.chunk;
  k.step = tag.step;
  return k;
}

// The transport that carries frames to `peer`: shared memory on this host, else TCP.
OpPeers::Route OpPeers::route(int peer) {
  Route r;
  ShmTransport* shm = engine_->shm();
  if (shm != nullptr && shm->reaches(peer)) {
    r.shm = shm;
  } else {
    r.tcp = engine_->tcp();
  }
  return r;
}

TransferHandle OpPeers::isend(int peer, Tag tag, const void* buf, size_t len) {
  auto t = std::make_shared<Transfer>(Transfer::Kind::kSend, key(peer, tag), signature_,
                                      const_cast<void*>(buf), len);
  if (ShmTransport* shm = engine_->shm()) t->set_bell(shm->bell());
  if (send_listener_) t->set_listener(send_listener_);
  transfers_.push_back(t);
  Status health = engine_->health();
  if (!health.is_ok()) {
    t->complete(health);
    return t;
  }
  FrameHeader h;
  h.type = FrameType::kData;
  h.epoch = engine_->opts_.epoch;
  h.signature = signature_;
  h.name_hash = name_hash_;
  h.seq = seq_;
  h.chunk = tag.chunk;
  h.step = tag.step;
  h.length = len;
  if (peer == rank()) {
    // A message to self never touches a transport.
    t->complete(engine_->mailbox().deliver(peer, h, buf));
  } else if (fuser_ != nullptr) {
    fuser_->append(peer, h, buf);
    t->complete(Status::ok());
  } else {
    Route r = route(peer);
    r.send(t, h, hold_);
    // The communicator may have broken between the health check above and
    // the send: a shared-memory queue failed before this frame joined it
    // would never complete it.
    if (r.shm != nullptr && !t->done()) {
      Status late = engine_->health();
      if (!late.is_ok()) r.shm->cancel_send(t, late);
    }
  }
  return t;
}

TransferHandle OpPeers::irecv(int peer, Tag tag, void* buf, size_t len) {
  auto t = std::make_shared<Transfer>(Transfer::Kind::kRecv, key(peer, tag), signature_, buf, len);
  if (ShmTransport* shm = engine_->shm()) t->set_bell(shm->bell());
  if (recv_listener_) t->set_listener(recv_listener_);
  transfers_.push_back(t);
  Status health = engine_->health();
  if (!health.is_ok()) {
    t->complete(health);
    return t;
  }
  engine_->mailbox().post(t);
  // A peer lost between the health check and the post would leave this
  // receive unfailed: check again now that it is visible to fail_all().
  health = engine_->health();
  if (!health.is_ok()) engine_->mailbox().cancel(t, health);
  return t;
}

Status OpPeers::wait(const TransferHandle& t) {
  // Frames held for company (set_hold_sends) leave before this thread sleeps.
  engine_->flush_held();
  // With same-host peers, the waiting thread moves shared-memory bytes itself.
  ShmTransport* shm = engine_->shm();
  Status st;
  if (!watch_) {
    st = shm != nullptr ? shm->wait(t, deadline_) : t->wait(deadline_);
  } else {
    // Wait in slices, asking the watch between them.
    for (;;) {
      Deadline slice = Deadline::after_ms(std::min(20, deadline_.remaining_ms()));
      st = shm != nullptr ? shm->wait(t, slice) : t->wait(slice);
      // A transfer that completes just as its slice expires has its own
      // status, not the slice's timeout.
      if (st.code() == KF_ERR_TIMEOUT && t->done()) st = t->status();
      if (st.code() != KF_ERR_TIMEOUT || deadline_.expired()) break;
      Status w = watch_();
      if (!w.is_ok()) {
        withdraw_outstanding(w);
        return w;
      }
    }
  }
  if (st.is_ok()) return st;
  return failed(t, st);
}

bool OpPeers::test(const TransferHandle& t, Status* st) {
  if (!t->done()) return false;
  *st = t->status();
  if (!st->is_ok()) *st = failed(t, *st);
  return true;
}

// Names the operation and the message in the error of transfer t, and
// withdraws what is still pending (the algorithm unwinds next).
Status OpPeers::failed(const TransferHandle& t, Status st) {
  const MessageKey& k = t->key();
  if (st.code() == KF_ERR_TIMEOUT) {
    st = timeout_error("operation '" + name_ + "' #" + std::to_string(display_seq_) + display_suffix_ + " timed out " +
                       (t->kind() == Transfer::Kind::kRecv ? "waiting for data from rank "
                                                           : "sending to rank ") +
                       std::to_string(k.peer) + " (chunk " + std::to_string(k.chunk) + ", step " +
                       std::to_string(k.step) + ")" + silence_note(k.peer));
  } else {
    st = Status(st.code(), "operation '" + name_ + "' #" + std::to_string(display_seq_) + display_suffix_ + ": " + st.message());
  }
  // The algorithm returns this error at once and frees its scratch buffers
  // as it unwinds: withdraw every pending transfer first, so that nothing is
  // written into memory that is about to be freed.
  withdraw_outstanding(st);
  return st;
}

// Which peer went silent, when the transport can tell (TCP liveness pings).
std::string OpPeers::silence_note(int waited_on) const {
  if (engine_->tcp() == nullptr) return "";
  std::string note = engine_->tcp()->silence_note(waited_on);
  return note.empty() ? "" : "; " + note;
}

void OpPeers::withdraw_outstanding(const Status& why) {
  for (auto& t : transfers_) {
    if (t->done()) continue;
    if (t->kind() == Transfer::Kind::kRecv) {
      engine_->mailbox().cancel(t, why);
    } else if (engine_->shm() != nullptr && engine_->shm()->reaches(t->key().peer)) {
      engine_->shm()->cancel_send(t, why);
    } else {
      engine_->tcp()->cancel_send(t, why);
    }
  }
  transfers_.clear();
}

}  // namespace kf
