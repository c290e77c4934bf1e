#include "algo/host_layout.h"

#include <algorithm>
#include <map>

#include "topo/job_topology.h"

namespace kf {

HostLayout::HostLayout(const std::vector<int>& labels) {
  // Renumber labels in order of first appearance, which is the order of each
  // host's lowest rank.
  std::map<int, int> index;
  host_of_.reserve(labels.size());
  local_rank_.reserve(labels.size());
  for (size_t r = 0; r < labels.size(); ++r) {
    auto it = index.find(labels[r]);
    if (it == index.end()) {
      it = index.emplace(labels[r], static_cast<int>(hosts_.size())).first;
      hosts_.emplace_back();
    }
    std::vector<int>& ranks = hosts_[static_cast<size_t>(it->second)];
    host_of_.push_back(it->second);
    local_rank_.push_back(static_cast<int>(ranks.size()));
    ranks.push_back(static_cast<int>(r));
  }
  if (!hosts_.empty()) {
    min_local_ = max_local_ = static_cast<int>(hosts_[0].size());
    for (const auto& h : hosts_) {
      min_local_ = std::min(min_local_, static_cast<int>(h.size()));
      max_local_ = std::max(max_local_, static_cast<int>(h.size()));
    }
  }
}

HostLayout HostLayout::from_topology(const JobTopology& t) {
  std::vector<int> labels(static_cast<size_t>(t.size()));
  for (int r = 0; r < t.size(); ++r) labels[static_cast<size_t>(r)] = t.host_of(r);
  return HostLayout(labels);
}

HostLayout HostLayout::one_per_host(int size) {
  std::vector<int> labels(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) labels[static_cast<size_t>(r)] = r;
  return HostLayout(labels);
}

HostLayout HostLayout::single_host(int size) {
  return HostLayout(std::vector<int>(static_cast<size_t>(size), 0));
}

std::vector<int> HostLayout::cross_group(int local) const {
  std::vector<int> out;
  out.reserve(hosts_.size());
  for (int h = 0; h < host_count(); ++h) out.push_back(rank_at(h, local));
  return out;
}

}  // namespace kf
