// GroupPeers: a Peers view of a subset of the ranks of another Peers, and
// HostGroups: the two families of subsets the hierarchical sparse all_reduce
// needs (the ranks of my host; the ranks with my local rank on every host).
//
// A view renumbers its members 0..m-1 in the order given and forwards every
// message to the parent under the parent's rank numbers, so an algorithm
// written for Peers runs unchanged on a sub-group. Two views of one parent
// may run phases of the same operation as long as they never use the same
// (parent peer, tag) pair: views with disjoint peer sets (my host vs. my
// column across hosts) never can, and one view's phases use distinct steps.
#pragma once

#include <vector>

#include "algo/peers.h"
#include "base/status.h"

namespace kf {

class GroupPeers final : public Peers {
 public:
  // `members` lists parent ranks; the parent's own rank must be one of them.
  GroupPeers(Peers& parent, std::vector<int> members);

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(members_.size()); }
  TransferHandle isend(int peer, Tag tag, const void* buf, size_t len) override;
  TransferHandle irecv(int peer, Tag tag, void* buf, size_t len) override;
  Status wait(const TransferHandle& t) override { return parent_.wait(t); }

 private:
  Peers& parent_;
  std::vector<int> members_;
  int rank_ = -1;
};

// The host structure the hierarchical algorithms need, in parent ranks.
struct HostGroups {
  std::vector<int> local;   // the ranks of my host, ascending (my local group)
  std::vector<int> column;  // the rank with my local rank on every host, by host
  int local_rank = 0;       // my index in `local`
  int host = 0;             // my index in `column`
};

// host_of[r] names the host of rank r (hosts numbered 0..H-1 in order of
// their lowest rank). Fails with KF_ERR_INVALID_USAGE when hosts hold
// different numbers of ranks (the columns would not line up).
Status make_host_groups(const std::vector<int>& host_of, int my_rank, HostGroups* out);

}  // namespace kf
