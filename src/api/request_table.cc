#include "api/request_table.h"

#include "base/block_pool.h"

namespace kf {
namespace api {

RequestTable& RequestTable::get() {
  static auto* table = new RequestTable();  // never destroyed: handles may outlive main()
  return *table;
}

namespace {
// Freed handles kept for reuse, at most (none under AddressSanitizer, which
// then still catches a use of a freed handle).
constexpr size_t kSpare = kKeepMemory ? 1024 : 0;
}  // namespace

RequestTable::RequestTable() {
  spare_.reserve(kSpare);  // retire_locked() never allocates
}

kf_request* RequestTable::add(kf_comm* comm, AsyncEngine* engine,
                              std::shared_ptr<AsyncRequest> state) {
  std::lock_guard<std::mutex> lock(mu_);
  kf_request* r;
  if (spare_.empty()) {
    auto fresh = std::make_unique<kf_request>();
    live_.insert(fresh.get());
    r = fresh.release();
  } else {  // a freed handle, registered again with its node
    r = spare_.back().value();
    live_.insert(std::move(spare_.back()));
    spare_.pop_back();
  }
  r->state = std::move(state);
  r->comm = comm;
  r->engine = engine;
  return r;
}

void RequestTable::retire_locked(Live::iterator it) {
  kf_request* r = *it;
  r->state.reset();
  r->comm = nullptr;
  r->engine = nullptr;
  if (spare_.size() < kSpare) {
    spare_.push_back(live_.extract(it));
  } else {
    live_.erase(it);
    delete r;
  }
}

void RequestTable::drop(kf_request* r) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(r);
  if (it != live_.end()) retire_locked(it);
}

bool RequestTable::live(kf_request* r) const {
  if (r == nullptr) return false;
  std::lock_guard<std::mutex> lock(mu_);
  return live_.count(r) != 0;
}

bool RequestTable::all_live(kf_request* const* reqs, size_t n) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < n; ++i) {
    if (reqs[i] != nullptr && live_.count(reqs[i]) == 0) return false;
  }
  return true;
}

kf_status_t RequestTable::free(kf_request* r) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(r);
  if (it == live_.end()) return KF_ERR_INVALID_ARGUMENT;
  if (!r->state->done()) return KF_ERR_INVALID_USAGE;
  retire_locked(it);
  return KF_SUCCESS;
}

}  // namespace api
}  // namespace kf
