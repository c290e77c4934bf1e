// The object behind the opaque kf_comm_t, the registry of live handles (so a
// destroyed or foreign handle is rejected instead of dereferenced), and the
// last-error bookkeeping of the C boundary.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "base/status.h"
#include "kungfu/types.h"
#include "sched/communicator.h"

struct kf_comm {
  std::unique_ptr<kf::Communicator> impl;
  std::mutex error_mu;
  std::string last_error;  // guarded by error_mu
};

namespace kf {
namespace api {

// The handle of a communicator just created (init or split): attaches what
// the layers above src/sched contribute (the KF_TIMELINE timeline), then
// registers the handle as live.
kf_comm* new_handle(std::unique_ptr<Communicator> impl);

// Unregisters a handle. Returns false if it was not live.
bool unregister_handle(kf_comm* c);
bool is_live(kf_comm* c);

// Records a failure's detail (for kf_comm_last_error) and returns its code.
// `comm` may be null: the detail then goes to the calling thread's
// communicator-less error.
kf_status_t fail(kf_comm* comm, const Status& st);
// Records nothing on success; returns the code.
inline kf_status_t finish(kf_comm* comm, const Status& st) {
  return st.is_ok() ? KF_SUCCESS : fail(comm, st);
}
const char* last_error(kf_comm* comm);

}  // namespace api
}  // namespace kf
