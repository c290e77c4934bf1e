// The object behind the opaque kf_request_t, and the table of live request
// handles: a freed or foreign handle is rejected instead of dereferenced.
// Freed handles and their table nodes are kept for the next (a few per
// training step's tensor, dozens in a burst: see base/block_pool.h for why
// not malloc), the latest freed first: as with malloc, a freed handle's
// value may come back as a new handle.
#pragma once

#include <memory>
#include <mutex>
#include <unordered_set>
#include <vector>

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
  // and releases it (kept for reuse, or deleted).
  void drop(kf_request* r);
  // Whether `r` is a live handle (false for null).
  bool live(kf_request* r) const;
  // Whether the `n` handles of `reqs` that are not null are all live (one
  // lock for a kf_request_wait_all).
  bool all_live(kf_request* const* reqs, size_t n) const;
  // kf_request_free: KF_ERR_INVALID_ARGUMENT if `r` is not live,
  // KF_ERR_INVALID_USAGE while its operation is pending, else unregisters
  // and releases it, as drop() does.
  kf_status_t free(kf_request* r);

 private:
  RequestTable();
  using Live = std::unordered_set<kf_request*>;
  // Unregisters `r` (its node, with `r` in it, onto spare_, or deleted).
  void retire_locked(Live::iterator it);

  mutable std::mutex mu_;
  Live live_;
  std::vector<Live::node_type> spare_;  // each holds a freed kf_request, for reuse
};

}  // namespace api
}  // namespace kf
