// OpArena: the SharedArena view of one shared-memory staging area (0: the
// blocking calls, 1: the asynchronous lane) for one operation, bound to its
// deadline and to the communicator's health, so a barrier fails promptly
// when a peer is lost instead of waiting forever.
#pragma once

#include "algo/arena.h"
#include "sched/engine.h"
#include "transport/shm/shm_transport.h"

namespace kf {

class OpArena : public SharedArena {
 public:
  OpArena(ShmTransport* shm, int area, Engine* engine, const Deadline& deadline, int* next_buffer,
          bool single_copy)
      : shm_(shm),
        area_(area),
        engine_(engine),
        deadline_(deadline),
        next_buffer_(next_buffer),
        single_copy_(single_copy) {}

  int rank() const override { return shm_->local_index(); }
  int size() const override { return shm_->local_size(); }
  size_t buffer_bytes() const override { return shm_->staging_bytes(); }
  char* buffer(int rank, int which) override { return shm_->staging(area_, rank, which); }
  int next_buffer() override {
    int b = *next_buffer_;
    *next_buffer_ ^= 1;
    return b;
  }
  void publish_signature(int which, uint32_t digest) override {
    shm_->publish_digest(area_, which, digest);
  }
  uint32_t signature_of(int rank, int which) override {
    return shm_->digest_of(area_, rank, which);
  }
  bool single_copy() const override { return single_copy_; }
  void expose(const void* addr) override { shm_->expose(area_, addr); }
  const char* exposed_by(int rank) override {
    return static_cast<const char*>(shm_->exposed_by(area_, rank));
  }
  Status read(int rank, const void* remote, void* dst, size_t len) override {
    return shm_->read_peer(rank, remote, dst, len);
  }
  Status barrier() override {
    return shm_->staging_barrier(area_, deadline_, [this] { return engine_->health(); });
  }

 private:
  ShmTransport* shm_;
  int area_;
  Engine* engine_;
  Deadline deadline_;
  int* next_buffer_;  // owned by the communicator: alternates across operations
  bool single_copy_;
};

}  // namespace kf
