#include "algo/sub_peers.h"

#include <cassert>
#include <utility>

namespace kf {

SubPeers::SubPeers(Peers& parent, std::vector<int> members, uint32_t phase)
    : parent_(parent), members_(std::move(members)), phase_(phase) {
  for (size_t i = 0; i < members_.size(); ++i) {
    if (members_[i] == parent_.rank()) rank_ = static_cast<int>(i);
  }
  // Both are programming errors of the composite algorithm, never user input.
  assert(rank_ >= 0 && "a SubPeers must contain the parent's own rank");
  assert(phase_ >= 1 && phase_ <= kMaxPhase);
  assert(static_cast<int>(members_.size()) <= kMaxGroupSize);
}

Tag SubPeers::map(Tag t) const {
  // A step that spills into the phase bits would alias another phase.
  assert(t.step < (1u << kPhaseShift));
  return Tag{t.chunk, t.step + (phase_ << kPhaseShift)};
}

TransferHandle SubPeers::isend(int peer, Tag tag, const void* buf, size_t len) {
  return parent_.isend(parent_rank(peer), map(tag), buf, len);
}

TransferHandle SubPeers::irecv(int peer, Tag tag, void* buf, size_t len) {
  return parent_.irecv(parent_rank(peer), map(tag), buf, len);
}

}  // namespace kf
