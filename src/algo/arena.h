// SharedArena: what the shared-memory collectives see. Every rank of the
// group owns two staging buffers that all ranks can read and write directly
// (double buffering), and the group has a barrier. Algorithms see ranks,
// buffers and a barrier; they never see segments, futexes or file names.
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/status.h"

namespace kf {

class SharedArena {
 public:
  virtual ~SharedArena() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Bytes of each staging buffer (a multiple of 64).
  virtual size_t buffer_bytes() const = 0;
  // Staging buffer `which` (0 or 1) of `rank`, mapped in this process.
  virtual char* buffer(int rank, int which) = 0;
  // The buffer index for the next use: 0, 1, 0, ... Every rank calls it in
  // the same sequence. A use is: write own buffer, barrier, read (barrier,
  // read)... The rule every use keeps: a rank writes a byte of its buffer
  // only after a barrier that every reader of the byte's previous contents
  // entered after reading them. Alternating buffers keeps it without an
  // extra barrier: a use's last reads end before the next use's first
  // barrier, so a buffer written again two uses later has no reader left.
  // (The staged all_reduce pipelines its rounds, each a use, and keeps the
  // rule slot by slot: see shm_collectives.cc.)
  virtual int next_buffer() = 0;
  // Every rank publishes its operation's signature digest with the buffer
  // it writes (before the barrier); after the barrier each rank compares.
  virtual void publish_signature(int which, uint32_t digest) = 0;
  virtual uint32_t signature_of(int rank, int which) = 0;

  // Single-copy access to peers' memory (the same answer on every rank).
  // A rank exposes one address per operation before a barrier; after it,
  // peers may read from that address in the rank's address space.
  virtual bool single_copy() const = 0;
  virtual void expose(const void* addr) = 0;
  virtual const char* exposed_by(int rank) = 0;
  virtual Status read(int rank, const void* remote, void* dst, size_t len) = 0;

  // Returns when every rank has called barrier() as often as this one. Fails
  // with the communicator's error if a peer is lost, or on timeout.
  virtual Status barrier() = 0;
};

}  // namespace kf
