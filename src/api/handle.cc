#include "api/handle.h"

#include "base/log.h"
#include "base/pointer_set.h"
#include "monitor/trace_observer.h"

namespace kf {
namespace api {
namespace {

// Every submission checks its communicator here: lookups take no lock.
PointerSet<kf_comm>& live() {
  static auto* set = new PointerSet<kf_comm>();  // never destroyed: usable at exit
  return *set;
}

thread_local std::string t_no_comm_error;
thread_local std::string t_returned;

void register_handle(kf_comm* c) {
  live().insert_new(c);  // (a new object)
}

}  // namespace

kf_comm* new_handle(std::unique_ptr<Communicator> impl) {
  impl->set_observer(comm_timeline(impl.get()));
  auto* c = new kf_comm();
  c->impl = std::move(impl);
  register_handle(c);
  return c;
}

bool unregister_handle(kf_comm* c) {
  return live().erase(c);
}

bool is_live(kf_comm* c) {
  return live().contains(c);
}

kf_status_t fail(kf_comm* comm, const Status& st) {
  KF_LOG_DEBUG(st.message());
  if (comm != nullptr && is_live(comm)) {
    std::lock_guard<std::mutex> lock(comm->error_mu);
    comm->last_error = st.message();
  } else {
    t_no_comm_error = st.message();
  }
  return st.code();
}

const char* last_error(kf_comm* comm) {
  if (comm == nullptr || !is_live(comm)) return t_no_comm_error.c_str();
  std::lock_guard<std::mutex> lock(comm->error_mu);
  // A thread-local copy: valid until this thread's next call, whatever other
  // threads do to the communicator's error text.
  t_returned = comm->last_error;
  return t_returned.c_str();
}

}  // namespace api
}  // namespace kf
