// Peers: everything a collective algorithm sees of the world. An algorithm is
// a step program over ranks and buffers; it never sees sockets, shared memory
// or frame formats. One Peers object serves exactly one named operation: the
// engine binds it to (epoch, name, sequence), so a Tag only has to tell the
// messages of one operation apart.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "base/status.h"

namespace kf {

// Distinguishes the messages of one operation between one pair of ranks.
// Every (peer, tag) pair must be used for at most one send and one receive.
struct Tag {
  uint32_t chunk = 0;  // pipeline chunk index
  uint32_t step = 0;   // algorithm step
};

// One posted send or receive. Obtained from Peers::isend / Peers::irecv and
// completed by Peers::wait. Dropping a handle without waiting is allowed only
// after the operation failed (the engine then cancels what is left).
class Transfer;
using TransferHandle = std::shared_ptr<Transfer>;

class Peers {
 public:
  virtual ~Peers() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Posts a send of `len` bytes to `peer`. `buf` must stay valid and
  // unchanged until wait() returns for the handle. len may be 0.
  virtual TransferHandle isend(int peer, Tag tag, const void* buf, size_t len) = 0;

  // Posts a receive of exactly `len` bytes from `peer` into `buf`. A message
  // of another length fails the operation with KF_ERR_INVALID_USAGE.
  virtual TransferHandle irecv(int peer, Tag tag, void* buf, size_t len) = 0;

  // Waits for one transfer. Returns the first error of the operation (peer
  // died, timeout, abort); after an error the algorithm must return it.
  virtual Status wait(const TransferHandle& t) = 0;

  // Whether a transfer has finished, without waiting; if so, *st is its
  // status. For algorithms that advance several operations on one thread
  // (RingTask::advance). After an error the caller withdraws what is left,
  // as after a failed wait().
  virtual bool test(const TransferHandle& t, Status* st) = 0;
};

}  // namespace kf
