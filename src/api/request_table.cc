#include "api/request_table.h"

namespace kf {
namespace api {

RequestTable& RequestTable::get() {
  static auto* table = new RequestTable();  // never destroyed: handles may outlive main()
  return *table;
}

kf_request* RequestTable::add(kf_comm* comm, AsyncEngine* engine,
                              std::shared_ptr<AsyncRequest> state) {
  auto r = std::make_unique<kf_request>();
  r->state = std::move(state);
  r->comm = comm;
  r->engine = engine;
  std::lock_guard<std::mutex> lock(mu_);
  live_.insert(r.get());
  return r.release();
}

void RequestTable::drop(kf_request* r) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (live_.erase(r) == 0) return;
  }
  delete r;
}

bool RequestTable::live(kf_request* r) const {
  if (r == nullptr) return false;
  std::lock_guard<std::mutex> lock(mu_);
  return live_.count(r) != 0;
}

kf_status_t RequestTable::free(kf_request* r) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = live_.find(r);
    if (it == live_.end()) return KF_ERR_INVALID_ARGUMENT;
    if (!r->state->done()) return KF_ERR_INVALID_USAGE;
    live_.erase(it);
  }
  delete r;
  return KF_SUCCESS;
}

}  // namespace api
}  // namespace kf
