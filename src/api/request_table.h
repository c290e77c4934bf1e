// The object behind the opaque kf_request_t, and the table of live request
// handles: a freed or foreign handle is rejected instead of dereferenced.
// Checks, registration and unregistration take no lock unless the table
// overflows (base/pointer_set.h: kf_request_test, wait and wait_all check
// every handle they are given; each operation makes and frees one). The memory of freed handles
// is kept for the next (base/block_pool.h), the latest freed first: as
// with malloc, a freed handle's value may come back as a new handle.
#pragma once

#include <memory>

#include "base/block_pool.h"
#include "base/pointer_set.h"
#include "kungfu/types.h"
#include "sched/async_engine.h"

struct kf_comm;

struct kf_request {
  std::shared_ptr<kf::AsyncRequest> state;
  kf_comm* comm = nullptr;
  kf::AsyncEngine* engine = nullptr;
};

namespace kf {
namespace api {

class RequestTable {
 public:
  // The table of the process.
  static RequestTable& get();

  // A new handle for `state`, of `engine` on `comm`, registered as live.
  kf_request* add(kf_comm* comm, AsyncEngine* engine, std::shared_ptr<AsyncRequest> state);
  // Unregisters a handle whose submission failed (it was never returned)
  // and releases it (its memory kept for reuse, or deleted).
  void drop(kf_request* r);
  // Whether `r` is a live handle (false for null).
  bool live(kf_request* r) const;
  // kf_request_free: KF_ERR_INVALID_ARGUMENT if `r` is not live,
  // KF_ERR_INVALID_USAGE while its operation is pending, else unregisters
  // and releases it, as drop() does.
  kf_status_t free(kf_request* r);
  // Warms the table slot free(r) starts from: kf_request_wait_all calls it
  // for each request once they are all complete, since callers free them
  // next, after a step's bulk data has flushed the table from the caches.
  void prefetch_free(const kf_request* r) const { live_.prefetch(r); }

 private:
  RequestTable() = default;
  // Destroys `r` and releases its memory (it is unregistered).
  void release(kf_request* r);

  BlockPool pool_{1024};
  // A handle that finds no free slot near its home goes to a set under a
  // lock (base/pointer_set.h).
  using LiveSet = PointerSet<kf_request, 4096>;
  LiveSet live_;
};

}  // namespace api
}  // namespace kf
