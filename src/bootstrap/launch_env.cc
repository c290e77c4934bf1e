#include "bootstrap/launch_env.h"

#include <cstdlib>
#include <cstring>

#include "base/config.h"
#include "base/log.h"
#include "transport/frame.h"
#include "transport/socket.h"

namespace kf {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return (v != nullptr && v[0] != '\0') ? v : nullptr;
}

Status parse_int(const char* name, const char* text, int lo, int hi, int* out) {
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || v < lo || v > hi) {
    return invalid_argument(std::string(name) + "=\"" + text + "\" is not an integer in [" +
                            std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  *out = static_cast<int>(v);
  return Status::ok();
}

// Under mpirun and srun nobody hands us a secret or a port: derive both from
// the job's identity, which every rank of the job sees and other jobs do not
// share. KF_JOB_SECRET / KF_ROOT_ADDR override them.
Status derive_root(const std::string& job_id, bool all_local, LaunchInfo* out) {
  uint64_t h = hash_name(job_id.data(), job_id.size());
  if (knob_is_set(Knob::KF_ROOT_ADDR)) {
    KF_RETURN_IF_ERROR(split_host_port(knob_string(Knob::KF_ROOT_ADDR), &out->root.host, &out->root.port));
  } else if (all_local) {
    out->root.host = "127.0.0.1";
    out->root.port = static_cast<uint16_t>(20000 + h % 20000);
  } else {
    return invalid_argument("ranks of this " + out->launcher +
                            " job span several hosts: set KF_ROOT_ADDR=host:port (rank 0's host)");
  }
  if (knob_is_set(Knob::KF_JOB_SECRET)) {
    return secret_from_hex(knob_string(Knob::KF_JOB_SECRET), &out->root.secret);
  }
  // A derived secret keeps strangers and other jobs out by accident, not by
  // design: the job id is visible to other users of the hosts. Say so once.
  if (out->rank == 0) {
    KF_LOG_WARN(out->launcher + " job without KF_JOB_SECRET: the job secret is derived from the job id, "
                "which other users of these hosts can see; set KF_JOB_SECRET (32 hex digits) to "
                "authenticate peers");
  }
  std::string salted = "kungfu-secret:" + job_id;
  uint64_t a = hash_name(salted.data(), salted.size());
  salted += ":2";
  uint64_t b = hash_name(salted.data(), salted.size());
  for (int i = 0; i < 8; ++i) {
    out->root.secret[static_cast<size_t>(i)] = static_cast<uint8_t>(a >> (8 * i));
    out->root.secret[static_cast<size_t>(8 + i)] = static_cast<uint8_t>(b >> (8 * i));
  }
  return Status::ok();
}

}  // namespace

Status detect_launch(LaunchInfo* out) {
  *out = LaunchInfo();
  if (knob_is_set(Knob::KF_RANK) || knob_is_set(Knob::KF_SIZE)) {
    out->launcher = "kfrun";
    KF_RETURN_IF_ERROR(parse_int("KF_SIZE", knob_string(Knob::KF_SIZE).c_str(), 1, 1 << 16, &out->size));
    KF_RETURN_IF_ERROR(parse_int("KF_RANK", knob_string(Knob::KF_RANK).c_str(), 0, out->size - 1, &out->rank));
    if (out->size == 1) return Status::ok();
    if (!knob_is_set(Knob::KF_ROOT_ADDR) || !knob_is_set(Knob::KF_JOB_SECRET)) {
      return invalid_argument("KF_RANK/KF_SIZE are set but KF_ROOT_ADDR or KF_JOB_SECRET is not");
    }
    KF_RETURN_IF_ERROR(split_host_port(knob_string(Knob::KF_ROOT_ADDR), &out->root.host, &out->root.port));
    return secret_from_hex(knob_string(Knob::KF_JOB_SECRET), &out->root.secret);
  }
  if (env("OMPI_COMM_WORLD_RANK") != nullptr && env("OMPI_COMM_WORLD_SIZE") != nullptr) {
    out->launcher = "mpirun";
    KF_RETURN_IF_ERROR(parse_int("OMPI_COMM_WORLD_SIZE", env("OMPI_COMM_WORLD_SIZE"), 1, 1 << 16, &out->size));
    KF_RETURN_IF_ERROR(parse_int("OMPI_COMM_WORLD_RANK", env("OMPI_COMM_WORLD_RANK"), 0, out->size - 1, &out->rank));
    if (out->size == 1) return Status::ok();
    // The job id: PMIx namespace (OpenMPI 4/5), else the HNP URI.
    const char* id = env("PMIX_NAMESPACE");
    if (id == nullptr) id = env("OMPI_MCA_orte_hnp_uri");
    if (id == nullptr) id = env("OMPI_MCA_ess_base_jobid");
    if (id == nullptr && !knob_is_set(Knob::KF_JOB_SECRET)) {
      return invalid_argument("mpirun: no job id (PMIX_NAMESPACE) found; set KF_ROOT_ADDR and KF_JOB_SECRET");
    }
    const char* local = env("OMPI_COMM_WORLD_LOCAL_SIZE");
    bool all_local = local != nullptr && std::atoi(local) == out->size;
    return derive_root(std::string("ompi:") + (id ? id : ""), all_local, out);
  }
  if (env("SLURM_PROCID") != nullptr && env("SLURM_NTASKS") != nullptr) {
    out->launcher = "srun";
    KF_RETURN_IF_ERROR(parse_int("SLURM_NTASKS", env("SLURM_NTASKS"), 1, 1 << 16, &out->size));
    KF_RETURN_IF_ERROR(parse_int("SLURM_PROCID", env("SLURM_PROCID"), 0, out->size - 1, &out->rank));
    if (out->size == 1) return Status::ok();
    std::string id = std::string("slurm:") + (env("SLURM_JOB_ID") ? env("SLURM_JOB_ID") : "") + "." +
                     (env("SLURM_STEP_ID") ? env("SLURM_STEP_ID") : "");
    const char* nnodes = env("SLURM_STEP_NUM_NODES");
    if (nnodes == nullptr) nnodes = env("SLURM_NNODES");
    bool all_local = nnodes != nullptr && std::atoi(nnodes) == 1;
    return derive_root(id, all_local, out);
  }
  out->launcher = "none";
  return Status::ok();
}

}  // namespace kf
