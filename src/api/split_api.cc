// Communicator split entry points (include/kungfu/split.h).
#include <string>

#include "api/guard.h"
#include "api/read_config.h"
#include "api/validate.h"
#include "kungfu/kungfu.h"
#include "topo/split_plan.h"

using kf::Status;
using kf::api::guarded;

namespace {

// Which split the caller asked for; the topology ones compute their color
// and key here, from the parent's topology (the same on every rank).
enum class SplitBy { kColor, kHost, kCross };

Status split(const char* call, kf_comm* comm, SplitBy by, int color, int key,
             const kf_config_t* config, kf_comm_t* newcomm) {
  // Argument checks are local: nothing is sent before they pass.
  if (newcomm != nullptr) *newcomm = nullptr;
  KF_RETURN_IF_ERROR(kf::api::Check(call, comm).comm().status());
  if (newcomm == nullptr) return kf::invalid_argument(std::string(call) + ": newcomm is NULL");
  kf::Communicator& parent = *comm->impl;
  const char* label = "split";
  if (by == SplitBy::kHost || by == SplitBy::kCross) {
    kf::SplitRequest r = by == SplitBy::kHost ? kf::host_split(parent.topology(), parent.rank())
                                              : kf::cross_split(parent.topology(), parent.rank());
    color = r.color;
    key = r.key;
    label = by == SplitBy::kHost ? "host" : "cross";
  } else if (color < 0 && color != KF_SPLIT_NONE) {
    return kf::invalid_argument(std::string(call) + ": color " + std::to_string(color) +
                                " is negative and not KF_SPLIT_NONE");
  }
  kf::CommOptions opts;
  opts.name = parent.name() + "/" + label + std::to_string(color);
  Status read = kf::api::read_config(config, parent.timeout_ms(), &opts);
  if (!read.is_ok()) return kf::invalid_argument(std::string(call) + ": " + read.message());

  std::unique_ptr<kf::Communicator> impl;
  KF_RETURN_IF_ERROR(
      parent.split(color < 0 ? kf::Communicator::kNoColor : color, key, opts, &impl));
  if (!impl) return Status::ok();  // KF_SPLIT_NONE
  *newcomm = kf::api::new_handle(std::move(impl));
  return Status::ok();
}

}  // namespace

extern "C" {

KF_API kf_status_t kf_comm_split(kf_comm_t comm, int color, int key, const kf_config_t* config,
                                 kf_comm_t* newcomm) {
  return guarded(comm, [&]() -> Status {
    return split("kf_comm_split", comm, SplitBy::kColor, color, key, config, newcomm);
  });
}

KF_API kf_status_t kf_comm_split_host(kf_comm_t comm, const kf_config_t* config,
                                      kf_comm_t* newcomm) {
  return guarded(comm, [&]() -> Status {
    return split("kf_comm_split_host", comm, SplitBy::kHost, 0, 0, config, newcomm);
  });
}

KF_API kf_status_t kf_comm_split_cross(kf_comm_t comm, const kf_config_t* config,
                                       kf_comm_t* newcomm) {
  return guarded(comm, [&]() -> Status {
    return split("kf_comm_split_cross", comm, SplitBy::kCross, 0, 0, config, newcomm);
  });
}

}  // extern "C"
