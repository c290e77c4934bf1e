// SubPeers: a sub-group of a Peers, seen as a Peers of its own. Group ranks
// 0 .. g-1 map to parent ranks (members[i]), and every tag's step is moved
// into its own "phase" range, so that the phases of one composite operation
// (a hierarchical all_reduce runs reduce-scatter, all_reduce and all-gather
// over different groups of the same operation) never reuse a (peer, tag)
// pair, even when two phases connect the same two ranks.
//
// Step layout: a phased step is (phase << kPhaseShift) | step. Every flat
// algorithm uses steps below 2 * size (ring: 2(n-1), recursive doubling:
// log2(n) + 2, trees: 1, all_to_all: n, barrier: log2(n)), so groups of up
// to kMaxGroupSize ranks fit, and phase 0 stays with the flat algorithms of
// the parent. Sub-groups are views of the operation's own Peers, never of
// another SubPeers (the step would overflow into the phase bits).
#pragma once

#include <cstdint>
#include <vector>

#include "algo/peers.h"

namespace kf {

constexpr uint32_t kPhaseShift = 16;
// Largest group whose flat algorithms keep their steps below 1 << kPhaseShift.
constexpr int kMaxGroupSize = (1 << (kPhaseShift - 1)) - 1;
// Largest phase number (the step field is 32 bits).
constexpr uint32_t kMaxPhase = (1u << (32 - kPhaseShift)) - 1;

// The tag of `step` in `phase`, for algorithms that address the parent's
// ranks directly but still need their own phase (the tree strategies).
inline Tag phase_tag(uint32_t phase, size_t chunk, uint32_t step) {
  return Tag{static_cast<uint32_t>(chunk), (phase << kPhaseShift) | step};
}

class SubPeers final : public Peers {
 public:
  // `members` are distinct parent ranks in group order and must contain the
  // parent's own rank. `phase` (1 .. kMaxPhase) must be different for every
  // sub-group of one operation whose messages could share a pair of ranks.
  SubPeers(Peers& parent, std::vector<int> members, uint32_t phase);

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(members_.size()); }
  TransferHandle isend(int peer, Tag tag, const void* buf, size_t len) override;
  TransferHandle irecv(int peer, Tag tag, void* buf, size_t len) override;
  Status wait(const TransferHandle& t) override { return parent_.wait(t); }
  bool test(const TransferHandle& t, Status* st) override { return parent_.test(t, st); }

  // The parent rank of group rank `r`.
  int parent_rank(int r) const { return members_[static_cast<size_t>(r)]; }

 private:
  Tag map(Tag t) const;

  Peers& parent_;
  std::vector<int> members_;
  uint32_t phase_;
  int rank_ = -1;
};

}  // namespace kf
