// Communicator split: which ranks of a parent form each new communicator.
// Pure functions of what every rank of the parent learns in the exchange, so
// every rank computes the same groups (MPI_Comm_split semantics).
#pragma once

#include <vector>

#include "topo/job_topology.h"

namespace kf {

// What one rank of the parent asked for.
struct SplitRequest {
  int color = -1;  // < 0: this rank joins no new communicator
  int key = 0;
};

// The parent ranks that asked for `color`, ordered by (key, parent rank): a
// rank's position in the result is its rank in the new communicator. Empty
// when color < 0.
std::vector<int> split_members(const std::vector<SplitRequest>& requests, int color);

// The colors and keys of the two topology splits, for parent rank `rank`:
// by host (one communicator per host, ordered by rank) and "cross" (one per
// local rank, joining the ranks of that local rank on every host, ordered by
// host index).
SplitRequest host_split(const JobTopology& topo, int rank);
SplitRequest cross_split(const JobTopology& topo, int rank);

}  // namespace kf
