// OpArena: the SharedArena view of the shared-memory staging area for one
// operation, bound to its deadline and to the communicator's health, so a
// barrier fails promptly when a peer is lost instead of waiting forever.
#pragma once

#include "algo/arena.h"
#include "sched/engine.h"
#include "transport/shm/shm_transport.h"

namespace kf {

class OpArena : public SharedArena {
 public:
  OpArena(ShmTransport* shm, Engine* engine, const Deadline& deadline, int* next_buffer)
      : shm_(shm), engine_(engine), deadline_(deadline), next_buffer_(next_buffer) {}

  int rank() const override { return shm_->local_index(); }
  int size() const override { return shm_->local_size(); }
  size_t buffer_bytes() const override { return shm_->staging_bytes(); }
  char* buffer(int rank, int which) override { return shm_->staging(rank, which); }
  int next_buffer() override {
    int b = *next_buffer_;
    *next_buffer_ ^= 1;
    return b;
  }
  Status barrier() override {
    return shm_->staging_barrier(deadline_, [this] { return engine_->health(); });
  }

 private:
  ShmTransport* shm_;
  Engine* engine_;
  Deadline deadline_;
  int* next_buffer_;  // owned by the communicator: alternates across operations
};

}  // namespace kf
