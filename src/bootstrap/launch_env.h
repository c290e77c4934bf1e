// Which launcher started this process, and what it tells us: rank, size,
// where the rendezvous point is, and the job secret. Recognises kfrun
// (KF_*), OpenMPI's mpirun (OMPI_COMM_WORLD_*) and Slurm's srun (SLURM_*).
#pragma once

#include <string>

#include "base/status.h"
#include "bootstrap/rendezvous.h"

namespace kf {

struct LaunchInfo {
  std::string launcher;  // "kfrun", "mpirun", "srun" or "none"
  int rank = 0;
  int size = 1;
  RendezvousPoint root;  // unused when size == 1
};

// Reads the environment. Fails with KF_ERR_INVALID_ARGUMENT and a sentence
// naming the variable when something is missing or malformed.
Status detect_launch(LaunchInfo* out);

}  // namespace kf
