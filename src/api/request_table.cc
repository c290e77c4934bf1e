#include "api/request_table.h"

#include <new>

namespace kf {
namespace api {

RequestTable& RequestTable::get() {
  static auto* table = new RequestTable();  // never destroyed: handles may outlive main()
  return *table;
}

kf_request* RequestTable::add(kf_comm* comm, AsyncEngine* engine,
                              std::shared_ptr<AsyncRequest> state) {
  void* mem = pool_.allocate(sizeof(kf_request));
  kf_request* r = new (mem) kf_request();
  r->state = std::move(state);
  r->comm = comm;
  r->engine = engine;
  live_.insert_new(r);
  return r;
}

void RequestTable::release(kf_request* r) {
  r->~kf_request();
  pool_.deallocate(r, sizeof(kf_request));
}

void RequestTable::drop(kf_request* r) {
  if (live_.erase(r)) release(r);
}

bool RequestTable::live(kf_request* r) const {
  return live_.contains(r);
}

kf_status_t RequestTable::free(kf_request* r) {
  // (Checked while this thread holds the handle's claim in the set: of two
  // threads freeing one handle at once, one finds it gone.)
  switch (live_.erase_if(r, [](kf_request* h) { return h->state->done(); })) {
    case LiveSet::Erased::kNotMember:
      return KF_ERR_INVALID_ARGUMENT;
    case LiveSet::Erased::kRefused:
      return KF_ERR_INVALID_USAGE;
    case LiveSet::Erased::kYes:
      break;
  }
  release(r);
  return KF_SUCCESS;
}

}  // namespace api
}  // namespace kf
