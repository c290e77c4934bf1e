#include "sparse/group_peers.h"

#include <algorithm>
#include <string>
#include <utility>

namespace kf {

GroupPeers::GroupPeers(Peers& parent, std::vector<int> members)
    : parent_(parent), members_(std::move(members)) {
  for (size_t i = 0; i < members_.size(); ++i) {
    if (members_[i] == parent_.rank()) rank_ = static_cast<int>(i);
  }
}

TransferHandle GroupPeers::isend(int peer, Tag tag, const void* buf, size_t len) {
  return parent_.isend(members_[static_cast<size_t>(peer)], tag, buf, len);
}

TransferHandle GroupPeers::irecv(int peer, Tag tag, void* buf, size_t len) {
  return parent_.irecv(members_[static_cast<size_t>(peer)], tag, buf, len);
}

Status make_host_groups(const std::vector<int>& host_of, int my_rank, HostGroups* out) {
  int hosts = 0;
  for (int h : host_of) hosts = std::max(hosts, h + 1);
  std::vector<std::vector<int>> ranks(static_cast<size_t>(hosts));
  for (size_t r = 0; r < host_of.size(); ++r) {
    if (host_of[r] < 0) return internal_error("make_host_groups: negative host number");
    ranks[static_cast<size_t>(host_of[r])].push_back(static_cast<int>(r));
  }
  for (const auto& h : ranks) {
    if (h.size() != ranks[0].size()) {
      return invalid_usage("the hierarchical sparse all_reduce needs the same number of ranks on "
                           "every host; host 0 has " + std::to_string(ranks[0].size()) +
                           " and another has " + std::to_string(h.size()));
    }
  }
  HostGroups g;
  g.host = host_of[static_cast<size_t>(my_rank)];
  g.local = ranks[static_cast<size_t>(g.host)];
  g.local_rank = static_cast<int>(std::find(g.local.begin(), g.local.end(), my_rank) - g.local.begin());
  for (const auto& h : ranks) g.column.push_back(h[static_cast<size_t>(g.local_rank)]);
  *out = std::move(g);
  return Status::ok();
}

}  // namespace kf
