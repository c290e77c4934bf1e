// KungFu's tree strategies for all_reduce (BinaryTreeStar with trees = 1,
// MultiBinaryTreeStar with one tree per host): see strategy.h.
//
// Tree t (t < trees) carries slice t of the buffer. Its root is host
// t mod H, and every host's leader in it is local rank t mod (its size), so
// different trees load different hosts and ranks. Hosts form a binary tree
// in the order of their distance from the root host (v = host - root mod H,
// children 2v+1 and 2v+2). Within a tree:
//  - up: every non-leader sends its slice to its host's leader (the star);
//    a leader combines its own data, its host's and its child leaders'
//    results chunk by chunk, and passes each chunk to its parent leader as
//    soon as it is complete. The root leader ends with the result
//    (KF_AVG: it divides).
//  - down: each chunk travels back the same way, forwarded as it arrives.
// Every rank receives the root's bits, so results agree bitwise.
//
// Order and deadlock freedom: non-leaders post all their messages first. A
// leader then works through its (chunk, tree) items in the same order on
// every rank; an item waits only on the same item at its children (up) or
// parent (down), which never wait on a later item.
#include <algorithm>
#include <vector>

#include "algo/common.h"
#include "algo/reduce_kernels.h"
#include "algo/strategy.h"
#include "algo/sub_peers.h"

namespace kf {
namespace {

constexpr int kMaxTrees = 64;
// Up items whose receives are posted ahead; each needs a chunk-sized scratch
// slot per input (host members and child leaders).
constexpr size_t kUpWindow = 4;
enum : uint32_t { kStepUp = 0, kStepDown = 1 };

struct Tree {
  Range slice;
  uint32_t phase = 0;
  int leader = -1;           // this host's leader in this tree
  int parent = -1;           // parent leader, -1 at the root (leaders only)
  std::vector<int> children;  // child leaders (leaders only)
  std::vector<int> members;   // the other ranks of this host (leaders only)
};

// One chunk of one tree that this rank leads.
struct Item {
  const Tree* tree;
  size_t chunk;
  Range range;
};

class TreeAllReduce {
 public:
  TreeAllReduce(Peers& p, const AlgoOptions& o, const HostLayout& hl, int trees, const void* send,
                void* recv, size_t count, kf_dtype_t dtype, kf_op_t op);
  Status run();

 private:
  Tree make_tree(int t, int trees) const;
  std::vector<int> inputs(const Item& it) const;

  Peers& p_;
  const HostLayout& hl_;
  const char* send_;
  char* recv_;
  const kf_dtype_t dtype_;
  const kf_op_t op_;
  const size_t es_;
  const size_t chunk_;
  const size_t count_;
  std::vector<Tree> trees_;
};

TreeAllReduce::TreeAllReduce(Peers& p, const AlgoOptions& o, const HostLayout& hl, int trees,
                             const void* send, void* recv, size_t count, kf_dtype_t dtype,
                             kf_op_t op)
    : p_(p), hl_(hl), send_(static_cast<const char*>(send)), recv_(static_cast<char*>(recv)),
      dtype_(dtype), op_(op), es_(dtype_size(dtype)), chunk_(chunk_elems(o, es_)), count_(count) {
  const int t_count = std::max(1, std::min<int>({trees, kMaxTrees, static_cast<int>(std::min<size_t>(count, kMaxTrees))}));
  for (int t = 0; t < t_count; ++t) trees_.push_back(make_tree(t, t_count));
}

Tree TreeAllReduce::make_tree(int t, int trees) const {
  Tree tr;
  tr.slice = balanced_piece(count_, static_cast<size_t>(trees), static_cast<size_t>(t));
  tr.phase = static_cast<uint32_t>(1 + t);
  const int H = hl_.host_count();
  const int root_host = t % H;
  auto leader_of = [&](int h) { return hl_.rank_at(h, t % hl_.local_size_of_host(h)); };
  const int host = hl_.host_of(p_.rank());
  tr.leader = leader_of(host);
  if (tr.leader != p_.rank()) return tr;
  const int v = mod(host - root_host, H);
  if (v > 0) tr.parent = leader_of(mod((v - 1) / 2 + root_host, H));
  for (int c = 2 * v + 1; c <= 2 * v + 2 && c < H; ++c) tr.children.push_back(leader_of(mod(c + root_host, H)));
  for (int m : hl_.local_group(host)) {
    if (m != tr.leader) tr.members.push_back(m);
  }
  return tr;
}

std::vector<int> TreeAllReduce::inputs(const Item& it) const {
  std::vector<int> in = it.tree->members;
  in.insert(in.end(), it.tree->children.begin(), it.tree->children.end());
  return in;
}

Status TreeAllReduce::run() {
  const int me = p_.rank();
  std::vector<TransferHandle> sends, member_recvs;
  std::vector<Item> items;
  size_t max_chunks = 0;
  for (const Tree& t : trees_) max_chunks = std::max(max_chunks, (t.slice.len + chunk_ - 1) / chunk_);

  // Non-leader roles: everything at once, in (chunk, tree) order.
  for (size_t k = 0; k < max_chunks; ++k) {
    for (const Tree& t : trees_) {
      const size_t off = k * chunk_;
      if (off >= t.slice.len) continue;
      const Range c{t.slice.begin + off, std::min(chunk_, t.slice.len - off)};
      if (t.leader == me) {
        items.push_back(Item{&t, k, c});
        continue;
      }
      member_recvs.push_back(
          p_.irecv(t.leader, phase_tag(t.phase, k, kStepDown), recv_ + c.begin * es_, c.len * es_));
      sends.push_back(
          p_.isend(t.leader, phase_tag(t.phase, k, kStepUp), send_ + c.begin * es_, c.len * es_));
    }
  }

  // Up: combine and pass on, receives posted kUpWindow items ahead.
  size_t max_inputs = 0;
  for (const Item& it : items) max_inputs = std::max(max_inputs, inputs(it).size());
  const size_t slot_bytes = chunk_ * es_;
  std::vector<char> slots(kUpWindow * max_inputs * slot_bytes);
  auto slot = [&](size_t i, size_t in) {
    return slots.data() + ((i % kUpWindow) * max_inputs + in) * slot_bytes;
  };
  std::vector<std::vector<TransferHandle>> up(items.size());
  auto post_up = [&](size_t i) {
    if (i >= items.size()) return;
    const Item& it = items[i];
    const std::vector<int> in = inputs(it);
    for (size_t j = 0; j < in.size(); ++j) {
      up[i].push_back(p_.irecv(in[j], phase_tag(it.tree->phase, it.chunk, kStepUp), slot(i, j),
                               it.range.len * es_));
    }
  };
  for (size_t i = 0; i + 1 < kUpWindow; ++i) post_up(i);
  for (size_t i = 0; i < items.size(); ++i) {
    post_up(i + kUpWindow - 1);  // reuses the slots of item i - 1, already combined
    const Item& it = items[i];
    char* acc = recv_ + it.range.begin * es_;
    const char* own = send_ + it.range.begin * es_;
    if (up[i].empty()) copy_elems(acc, own, it.range.len, es_);
    for (size_t j = 0; j < up[i].size(); ++j) {
      KF_RETURN_IF_ERROR(p_.wait(up[i][j]));
      reduce_to(dtype_, op_, acc, j == 0 ? own : acc, slot(i, j), it.range.len);
    }
    up[i].clear();
    if (it.tree->parent >= 0) {
      sends.push_back(p_.isend(it.tree->parent, phase_tag(it.tree->phase, it.chunk, kStepUp), acc,
                               it.range.len * es_));
    } else if (op_ == KF_AVG) {
      finish_average(dtype_, acc, it.range.len, p_.size());
    }
  }

  // Down: the result arrives in place (after this rank's own up message of
  // the chunk, which its parent needed first) and is forwarded at once.
  std::vector<TransferHandle> down(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    const Item& it = items[i];
    if (it.tree->parent >= 0) {
      down[i] = p_.irecv(it.tree->parent, phase_tag(it.tree->phase, it.chunk, kStepDown),
                         recv_ + it.range.begin * es_, it.range.len * es_);
    }
  }
  for (size_t i = 0; i < items.size(); ++i) {
    const Item& it = items[i];
    if (down[i]) KF_RETURN_IF_ERROR(p_.wait(down[i]));
    const char* res = recv_ + it.range.begin * es_;
    for (int c : it.tree->children) {
      sends.push_back(p_.isend(c, phase_tag(it.tree->phase, it.chunk, kStepDown), res, it.range.len * es_));
    }
    for (int m : it.tree->members) {
      sends.push_back(p_.isend(m, phase_tag(it.tree->phase, it.chunk, kStepDown), res, it.range.len * es_));
    }
  }
  KF_RETURN_IF_ERROR(wait_all(p_, member_recvs));
  return wait_all(p_, sends);
}

}  // namespace

Status tree_all_reduce(Peers& p, const AlgoOptions& o, const HostLayout& hosts, int trees,
                       const void* send, void* recv, size_t count, kf_dtype_t dtype, kf_op_t op) {
  if (count == 0) return Status::ok();
  if (p.size() == 1) {
    copy_elems(recv, send, count, dtype_size(dtype));
    return Status::ok();
  }
  return TreeAllReduce(p, o, hosts, trees, send, recv, count, dtype, op).run();
}

}  // namespace kf
