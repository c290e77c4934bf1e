// The layout of a whole job: every rank's LocalTopology (in rank order),
// grouped into hosts. Ranks with the same host_id form a host; hosts are
// numbered in order of their lowest rank, and a rank's local rank is its
// position (by global rank) among the ranks of its host. Immutable once built;
// every rank of a communicator builds the same one.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "topo/local_topology.h"

namespace kf {

class JobTopology {
 public:
  JobTopology() = default;  // empty: size() == 0
  explicit JobTopology(std::vector<LocalTopology> ranks);
  // From every rank's encode() output, in rank order. Fails on a malformed
  // record, naming the rank.
  static Status from_records(const std::vector<std::string>& encoded, JobTopology* out);

  int size() const { return static_cast<int>(ranks_.size()); }
  int host_count() const { return static_cast<int>(hosts_.size()); }
  // Preconditions: 0 <= rank < size(), 0 <= host < host_count().
  int host_of(int rank) const { return host_of_[static_cast<size_t>(rank)]; }
  int local_rank(int rank) const { return local_rank_[static_cast<size_t>(rank)]; }
  int local_size(int rank) const { return static_cast<int>(hosts_[static_cast<size_t>(host_of(rank))].size()); }
  const std::vector<int>& ranks_of_host(int host) const { return hosts_[static_cast<size_t>(host)]; }
  const LocalTopology& rank_info(int rank) const { return ranks_[static_cast<size_t>(rank)]; }

  // Human-readable, one line per host and per rank; ends with a newline.
  std::string to_text() const;
  // One JSON object: {"size":..,"host_count":..,"hosts":[{..,"ranks":[..]}],"ranks":[{..}]}.
  std::string to_json() const;

 private:
  std::vector<LocalTopology> ranks_;
  std::vector<std::vector<int>> hosts_;  // ranks of each host, ascending
  std::vector<int> host_of_;
  std::vector<int> local_rank_;
};

}  // namespace kf
