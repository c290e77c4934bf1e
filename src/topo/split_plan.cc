#include "topo/split_plan.h"

#include <algorithm>

namespace kf {

std::vector<int> split_members(const std::vector<SplitRequest>& requests, int color) {
  std::vector<int> members;
  if (color < 0) return members;
  for (size_t r = 0; r < requests.size(); ++r) {
    if (requests[r].color == color) members.push_back(static_cast<int>(r));
  }
  // Ties in key keep the parent's order, as MPI_Comm_split requires.
  std::stable_sort(members.begin(), members.end(), [&](int a, int b) {
    return requests[static_cast<size_t>(a)].key < requests[static_cast<size_t>(b)].key;
  });
  return members;
}

SplitRequest host_split(const JobTopology& topo, int rank) {
  SplitRequest r;
  r.color = topo.host_of(rank);
  r.key = rank;
  return r;
}

SplitRequest cross_split(const JobTopology& topo, int rank) {
  SplitRequest r;
  r.color = topo.local_rank(rank);
  r.key = topo.host_of(rank);
  return r;
}

}  // namespace kf
