// Topology query entry points (include/kungfu/topology.h).
#include <cstring>

#include "api/guard.h"
#include "api/validate.h"
#include "kungfu/kungfu.h"
#include "topo/job_topology.h"

using kf::Status;
using kf::api::guarded;

namespace {

// The common prologue: a live communicator and a non-NULL out-parameter.
Status check(const char* call, kf_comm* comm, const void* out, const char* out_name) {
  KF_RETURN_IF_ERROR(kf::api::Check(call, comm).comm().status());
  if (out == nullptr) return kf::invalid_argument(std::string(call) + ": " + out_name + " is NULL");
  return Status::ok();
}

Status check_rank(const char* call, kf_comm* comm, int rank) {
  int size = comm->impl->size();
  if (rank < 0 || rank >= size) {
    return kf::invalid_argument(std::string(call) + ": rank " + std::to_string(rank) +
                                " is not a rank in [0, " + std::to_string(size - 1) + "]");
  }
  return Status::ok();
}

}  // namespace

extern "C" {

KF_API kf_status_t kf_comm_host_count(kf_comm_t comm, int* count) {
  return guarded(comm, [&]() -> Status {
    KF_RETURN_IF_ERROR(check("kf_comm_host_count", comm, count, "count"));
    *count = comm->impl->topology().host_count();
    return Status::ok();
  });
}

KF_API kf_status_t kf_comm_host_index(kf_comm_t comm, int rank, int* host) {
  return guarded(comm, [&]() -> Status {
    KF_RETURN_IF_ERROR(check("kf_comm_host_index", comm, host, "host"));
    KF_RETURN_IF_ERROR(check_rank("kf_comm_host_index", comm, rank));
    *host = comm->impl->topology().host_of(rank);
    return Status::ok();
  });
}

KF_API kf_status_t kf_comm_local_rank(kf_comm_t comm, int* local_rank) {
  return guarded(comm, [&]() -> Status {
    KF_RETURN_IF_ERROR(check("kf_comm_local_rank", comm, local_rank, "local_rank"));
    *local_rank = comm->impl->topology().local_rank(comm->impl->rank());
    return Status::ok();
  });
}

KF_API kf_status_t kf_comm_local_size(kf_comm_t comm, int* local_size) {
  return guarded(comm, [&]() -> Status {
    KF_RETURN_IF_ERROR(check("kf_comm_local_size", comm, local_size, "local_size"));
    *local_size = comm->impl->topology().local_size(comm->impl->rank());
    return Status::ok();
  });
}

KF_API kf_status_t kf_comm_numa_node(kf_comm_t comm, int rank, int* numa_node) {
  return guarded(comm, [&]() -> Status {
    KF_RETURN_IF_ERROR(check("kf_comm_numa_node", comm, numa_node, "numa_node"));
    KF_RETURN_IF_ERROR(check_rank("kf_comm_numa_node", comm, rank));
    *numa_node = comm->impl->topology().rank_info(rank).numa_node;
    return Status::ok();
  });
}

KF_API kf_status_t kf_comm_topology_dump(kf_comm_t comm, kf_topo_format_t format_in, char* buf,
                                         size_t* len) {
  return guarded(comm, [&]() -> Status {
    const char* call = "kf_comm_topology_dump";
    KF_RETURN_IF_ERROR(check(call, comm, len, "len"));
    int format = kf::api::raw_enum(format_in);
    if (format != KF_TOPO_TEXT && format != KF_TOPO_JSON) {
      return kf::invalid_argument(std::string(call) + ": format " + std::to_string(format) +
                                  " is not KF_TOPO_TEXT or KF_TOPO_JSON");
    }
    const kf::JobTopology& topo = comm->impl->topology();
    std::string text = format == KF_TOPO_JSON ? topo.to_json() : topo.to_text();
    size_t needed = text.size() + 1;
    if (buf == nullptr && *len == 0) {
      *len = needed;
      return Status::ok();
    }
    if (buf == nullptr || *len < needed) {
      size_t had = *len;
      *len = needed;
      return kf::invalid_argument(std::string(call) + ": " + (buf == nullptr ? "buf is NULL" : "buffer of " +
                                  std::to_string(had) + " bytes is too small") + "; " +
                                  std::to_string(needed) + " bytes needed (set in *len)");
    }
    std::memcpy(buf, text.c_str(), needed);
    *len = needed;
    return Status::ok();
  });
}

}  // extern "C"
