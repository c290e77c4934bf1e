// HostLayout: which host every rank of a communicator runs on, and the two
// kinds of sub-group the hierarchical algorithms use:
//  - the local group of a host: its ranks, ascending (they share memory);
//  - cross group j: local rank j of every host, in host order (one rank per
//    host, so its traffic is all inter-host).
// Hosts are numbered in order of their lowest rank and a rank's local rank
// is its position among its host's ranks, as in topo/job_topology.h. Every
// rank of a communicator builds the same layout, so every rank makes the
// same algorithmic choices from it.
//
// Unequal hosts (e.g. 3 + 1 ranks): cross groups exist for local ranks
// 0 .. min_local_size()-1 only, so that every cross group has one rank on
// every host. Ranks with a higher local rank take part in their host's
// intra-host phases only (see hierarchical.cc).
#pragma once

#include <cstddef>
#include <vector>

namespace kf {

class JobTopology;

class HostLayout {
 public:
  HostLayout() = default;  // empty: size() == 0
  // host_of[r] is any host label of rank r (equal labels = same host); the
  // labels are renumbered as described above.
  explicit HostLayout(const std::vector<int>& host_of);
  static HostLayout from_topology(const JobTopology& t);
  // Every rank on its own host, or all on one host.
  static HostLayout one_per_host(int size);
  static HostLayout single_host(int size);

  int size() const { return static_cast<int>(host_of_.size()); }
  int host_count() const { return static_cast<int>(hosts_.size()); }
  int host_of(int rank) const { return host_of_[static_cast<size_t>(rank)]; }
  int local_rank(int rank) const { return local_rank_[static_cast<size_t>(rank)]; }
  int local_size_of_host(int host) const {
    return static_cast<int>(hosts_[static_cast<size_t>(host)].size());
  }
  const std::vector<int>& local_group(int host) const { return hosts_[static_cast<size_t>(host)]; }
  // The rank with local rank `local` on `host`; precondition: it exists.
  int rank_at(int host, int local) const {
    return hosts_[static_cast<size_t>(host)][static_cast<size_t>(local)];
  }
  int min_local_size() const { return min_local_; }
  int max_local_size() const { return max_local_; }
  bool uniform() const { return min_local_ == max_local_; }
  // Cross group `local` (0 <= local < min_local_size()): rank_at(h, local)
  // for every host h in order.
  std::vector<int> cross_group(int local) const;

 private:
  std::vector<int> host_of_;
  std::vector<int> local_rank_;
  std::vector<std::vector<int>> hosts_;
  int min_local_ = 0;
  int max_local_ = 0;
};

}  // namespace kf
