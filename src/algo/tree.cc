// Tree-shaped broadcast and reduce. Ranks are renumbered relative to root
// (v = rank - root mod size) so that root is always v = 0.
//
// Binomial tree: v's parent is v with its lowest set bit cleared; its
// children are v + 2^j for every 2^j below that bit. Depth is ceil(log2 n),
// which makes it the choice for small messages.
// Chain: v's parent is v - 1 and its child v + 1. With the data cut into
// chunks and forwarded as each chunk arrives, a large broadcast costs about
// one message time plus (size - 1) chunk times, close to the link speed.
#include <algorithm>
#include <vector>

#include "algo/common.h"
#include "algo/internal.h"
#include "algo/reduce_kernels.h"

namespace kf {
namespace {

int lowest_bit(int v) {
  return v & -v;
}

// Children of v in the binomial tree over n ranks, in relative numbering.
std::vector<int> binomial_children(int v, int n) {
  std::vector<int> out;
  // The root's children start at the highest power of two below n.
  int top = 1;
  while (top < n) top <<= 1;
  const int limit = v == 0 ? top : lowest_bit(v);
  for (int m = limit >> 1; m >= 1; m >>= 1) {
    if (v + m < n) out.push_back(v + m);
  }
  return out;
}

// Receives chunks from `parent` (unless root) and forwards each chunk to every
// child as soon as it has arrived. All receives are posted first: they are
// plain posted buffers, and posting them up front lets chunks stream in.
Status pipelined_bcast(Peers& p, int parent, const std::vector<int>& children, void* buf,
                       size_t count, size_t es, size_t chunk) {
  std::vector<TransferHandle> recvs;
  if (parent >= 0) post_chunked_recv(p, parent, 0, buf, count, es, chunk, recvs);
  std::vector<TransferHandle> sends;
  size_t k = 0;
  for (size_t off = 0; off < count; off += chunk, ++k) {
    const size_t len = std::min(chunk, count - off);
    if (parent >= 0) {
      Status st = p.wait(recvs[k]);
      if (!st.is_ok()) return st;
    }
    for (int c : children) {
      sends.push_back(p.isend(c, make_tag(k, 0), byte_ptr(buf, off, es), len * es));
    }
  }
  return wait_all(p, sends);
}

}  // namespace

Status binomial_broadcast(Peers& p, const AlgoOptions& o, void* buf, size_t count, kf_dtype_t dtype,
                          int root) {
  const int n = p.size();
  const int v = mod(p.rank() - root, n);
  const int parent = v == 0 ? -1 : mod(v - lowest_bit(v) + root, n);
  std::vector<int> children;
  for (int c : binomial_children(v, n)) children.push_back(mod(c + root, n));
  const size_t es = dtype_size(dtype);
  return pipelined_bcast(p, parent, children, buf, count, es, chunk_elems(o, es));
}

Status chain_broadcast(Peers& p, const AlgoOptions& o, void* buf, size_t count, kf_dtype_t dtype,
                       int root) {
  const int n = p.size();
  const int v = mod(p.rank() - root, n);
  const int parent = v == 0 ? -1 : mod(p.rank() - 1, n);
  std::vector<int> children;
  if (v + 1 < n) children.push_back(mod(p.rank() + 1, n));
  const size_t es = dtype_size(dtype);
  return pipelined_bcast(p, parent, children, buf, count, es, chunk_elems(o, es));
}

Status binomial_reduce(Peers& p, const AlgoOptions& o, const void* send, void* recv, size_t count,
                       kf_dtype_t dtype, kf_op_t op, int root) {
  const int n = p.size();
  const int r = p.rank();
  const int v = mod(r - root, n);
  const size_t es = dtype_size(dtype);
  const size_t chunk = chunk_elems(o, es);
  const std::vector<int> children = binomial_children(v, n);

  // The accumulator: root's result buffer; scratch on inner ranks; a leaf
  // just sends its own data.
  std::vector<char> scratch;
  const void* acc_in = send;
  void* acc = nullptr;
  if (v == 0) {
    copy_elems(recv, send, count, es);
    acc = recv;
  } else if (!children.empty()) {
    scratch.assign(static_cast<const char*>(send), static_cast<const char*>(send) + count * es);
    acc = scratch.data();
  }
  if (acc != nullptr) acc_in = acc;

  // Children are combined nearest first (v+1, v+2, v+4, ...): each child's
  // subtree covers the ranks just above the previous ones, so the value stays
  // "lower ranks op higher ranks" in relative order.
  if (!children.empty()) {
    std::vector<char> tmp(count * es);
    for (auto it = children.rbegin(); it != children.rend(); ++it) {
      std::vector<TransferHandle> ts;
      const int child = mod(*it + root, n);
      post_chunked_recv(p, child, 0, tmp.data(), count, es, chunk, ts);
      KF_RETURN_IF_ERROR(wait_all(p, ts));
      reduce_to(dtype, op, acc, acc, tmp.data(), count);
    }
  }

  if (v != 0) {
    std::vector<TransferHandle> ts;
    const int parent = mod(v - lowest_bit(v) + root, n);
    post_chunked_send(p, parent, 0, acc_in, count, es, chunk, ts);
    return wait_all(p, ts);
  }
  if (op == KF_AVG) finish_average(dtype, recv, count, n);
  return Status::ok();
}

}  // namespace kf
