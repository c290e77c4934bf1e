// Strategy entry points (include/kungfu/strategy.h).
#include "api/guard.h"
#include "api/validate.h"
#include "kungfu/kungfu.h"

using kf::Status;
using kf::api::guarded;

extern "C" {

KF_API kf_status_t kf_comm_set_strategy(kf_comm_t comm, kf_strategy_t strategy) {
  return guarded(comm, [&]() -> Status {
    KF_RETURN_IF_ERROR(kf::api::Check("kf_comm_set_strategy", comm).comm().status());
    // The value is checked inside, collectively: a rank with a bad value
    // still takes part, so the others fail at once instead of timing out.
    return comm->impl->set_strategy(kf::api::raw_enum(strategy));
  });
}

KF_API kf_status_t kf_comm_get_strategy(kf_comm_t comm, kf_strategy_t* strategy) {
  return guarded(comm, [&]() -> Status {
    KF_RETURN_IF_ERROR(kf::api::Check("kf_comm_get_strategy", comm).comm().status());
    if (strategy == nullptr) return kf::invalid_argument("kf_comm_get_strategy: strategy is NULL");
    *strategy = static_cast<kf_strategy_t>(comm->impl->strategy());
    return Status::ok();
  });
}

}  // extern "C"
