// Scheduler parameters and online tuning (include/kungfu/tune.h).
#include "api/guard.h"
#include "api/validate.h"
#include "kungfu/kungfu.h"
#include "sched/step_tuner.h"

using kf::Status;
using kf::api::guarded;

extern "C" {

KF_API kf_status_t kf_comm_step(kf_comm_t comm) {
  return guarded(comm, [&]() -> Status {
    KF_RETURN_IF_ERROR(kf::api::Check("kf_comm_step", comm).comm().status());
    return comm->impl->step_tuner().step();
  });
}

KF_API kf_status_t kf_comm_get_sched(kf_comm_t comm, uint64_t* partition_bytes,
                                     uint64_t* credit_bytes) {
  return guarded(comm, [&]() -> Status {
    KF_RETURN_IF_ERROR(kf::api::Check("kf_comm_get_sched", comm).comm().status());
    if (partition_bytes) *partition_bytes = comm->impl->async().partition_bytes();
    if (credit_bytes) *credit_bytes = comm->impl->async().credit_bytes();
    return Status::ok();
  });
}

KF_API kf_status_t kf_comm_set_sched(kf_comm_t comm, uint64_t partition_bytes,
                                     uint64_t credit_bytes) {
  return guarded(comm, [&]() -> Status {
    KF_RETURN_IF_ERROR(kf::api::Check("kf_comm_set_sched", comm).comm().status());
    comm->impl->async().set_partition_bytes(partition_bytes);
    comm->impl->async().set_credit_bytes(credit_bytes);
    return Status::ok();
  });
}

}  // extern "C"
