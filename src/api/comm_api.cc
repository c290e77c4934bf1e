// Communicator life cycle entry points.
#include <cstddef>

#include "api/guard.h"
#include "api/read_config.h"
#include "base/config.h"
#include "base/log.h"
#include "bootstrap/launch_env.h"
#include "bootstrap/unique_id.h"
#include "kungfu/kungfu.h"
#include "sched/async_engine.h"

namespace kf {
namespace api {
namespace {

Status make_comm(const RendezvousPoint& root, int rank, int size, const CommOptions& opts,
                 kf_comm_t* out) {
  std::unique_ptr<Communicator> impl;
  KF_RETURN_IF_ERROR(Communicator::create(root, rank, size, opts, &impl));
  log_set_rank(rank);
  *out = new_handle(std::move(impl));
  return Status::ok();
}

}  // namespace
}  // namespace api
}  // namespace kf

using kf::Status;
using kf::api::guarded;

extern "C" {

KF_API kf_status_t kf_get_unique_id(kf_unique_id_t* id) {
  return guarded(nullptr, [&]() -> Status {
    if (id == nullptr) return kf::invalid_argument("kf_get_unique_id: id is NULL");
    return kf::create_unique_id(kf::knob_int(kf::Knob::KF_TIMEOUT_MS), id);
  });
}

KF_API kf_status_t kf_comm_init(const kf_unique_id_t* id, int size, int rank,
                                const kf_config_t* config, kf_comm_t* comm) {
  return guarded(nullptr, [&]() -> Status {
    if (comm == nullptr) return kf::invalid_argument("kf_comm_init: comm is NULL");
    *comm = nullptr;
    if (id == nullptr) return kf::invalid_argument("kf_comm_init: id is NULL");
    if (size < 1 || size > (1 << 16)) {
      return kf::invalid_argument("kf_comm_init: size " + std::to_string(size) + " is not in [1, 65536]");
    }
    if (rank < 0 || rank >= size) {
      return kf::invalid_argument("kf_comm_init: rank " + std::to_string(rank) + " is not in [0, " +
                                  std::to_string(size - 1) + "]");
    }
    kf::CommOptions opts;
    KF_RETURN_IF_ERROR(kf::api::read_config(config, kf::knob_int(kf::Knob::KF_TIMEOUT_MS), &opts));
    kf::RendezvousPoint root;
    KF_RETURN_IF_ERROR(kf::decode_unique_id(*id, &root));
    return kf::api::make_comm(root, rank, size, opts, comm);
  });
}

KF_API kf_status_t kf_comm_init_from_env(const kf_config_t* config, kf_comm_t* comm) {
  return guarded(nullptr, [&]() -> Status {
    if (comm == nullptr) return kf::invalid_argument("kf_comm_init_from_env: comm is NULL");
    *comm = nullptr;
    kf::CommOptions opts;
    KF_RETURN_IF_ERROR(kf::api::read_config(config, kf::knob_int(kf::Knob::KF_TIMEOUT_MS), &opts));
    kf::LaunchInfo launch;
    KF_RETURN_IF_ERROR(kf::detect_launch(&launch));
    if (launch.rank == 0 && launch.size > 1) {
      Status st = kf::start_rendezvous_server(&launch.root, opts.timeout_ms);
      if (!st.is_ok()) {
        return Status(st.code(), "rank 0 cannot open the rendezvous point " +
                                     launch.root.host + ":" + std::to_string(launch.root.port) +
                                     " (" + launch.launcher + "): " + st.message());
      }
    }
    return kf::api::make_comm(launch.root, launch.rank, launch.size, opts, comm);
  });
}

KF_API kf_status_t kf_comm_destroy(kf_comm_t comm) {
  if (comm == nullptr) return KF_SUCCESS;
  try {
    // The thread running a callback may be one that destroying has to
    // join or wait for (the engine's own, or a waiter driving it).
    if (kf::in_completion_callback()) {
      return kf::api::fail(comm, kf::invalid_usage("kf_comm_destroy: called inside a completion "
                                                   "callback; destroy the communicator after "
                                                   "the callback returns"));
    }
    if (!kf::api::unregister_handle(comm)) {
      return kf::api::fail(
          nullptr,
          kf::invalid_usage("kf_comm_destroy: not a live communicator (destroyed twice?)"));
    }
  } catch (...) {
    return KF_ERR_INTERNAL;
  }
  try {
    comm->impl->shutdown();
  } catch (...) {
    // Shutdown is best effort: the handle is freed whatever happens.
  }
  delete comm;
  return KF_SUCCESS;
}

KF_API kf_status_t kf_comm_rank(kf_comm_t comm, int* rank) {
  return guarded(comm, [&]() -> Status {
    if (comm == nullptr || !kf::api::is_live(comm)) return kf::invalid_argument("kf_comm_rank: invalid communicator");
    if (rank == nullptr) return kf::invalid_argument("kf_comm_rank: rank is NULL");
    *rank = comm->impl->rank();
    return Status::ok();
  });
}

KF_API kf_status_t kf_comm_size(kf_comm_t comm, int* size) {
  return guarded(comm, [&]() -> Status {
    if (comm == nullptr || !kf::api::is_live(comm)) return kf::invalid_argument("kf_comm_size: invalid communicator");
    if (size == nullptr) return kf::invalid_argument("kf_comm_size: size is NULL");
    *size = comm->impl->size();
    return Status::ok();
  });
}

KF_API const char* kf_comm_last_error(kf_comm_t comm) { return kf::api::last_error(comm); }

}  // extern "C"
