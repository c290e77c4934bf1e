// The reduce-scatter and all-gather halves of the ring (see ring.h).
//
// Deadlock freedom: a rank only ever blocks on a receive, never on a send,
// until all its receives of the phase are done. Receives are posted in the
// order they complete, a bounded window ahead, and always before the sends
// that could trigger them. Each receive i of a rank depends only on the left
// neighbour's receive i - chunks (the previous step of the same chunk), so by
// induction on i every receive completes, whatever the transport buffers.
#include "algo/ring.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "algo/reduce_kernels.h"

namespace kf {
namespace {

// Receives posted ahead of the one being waited for. Each one in the
// reduce-scatter needs a chunk-sized scratch slot (16 MiB at the default
// 1 MiB chunk). A receive posted late makes its frame arrive as an
// unexpected message (an extra copy and allocation): over TCP at 64 MiB,
// np=2, a window of 16 measured 1.3 GB/s against 0.8 GB/s with 4.
constexpr size_t kReduceWindow = 16;
// The all-gather receives straight into the result, so it can look further.
constexpr size_t kGatherWindow = 32;

}  // namespace

Status ring_reduce_scatter_core(Peers& p, const RingReduceScatterArgs& a) {
  const Layout& l = *a.layout;
  const int n = p.size();
  const int r = p.rank();
  const int right = mod(r + 1, n);
  const int left = mod(r - 1, n);
  const size_t es = dtype_size(a.dtype);
  const size_t K = l.chunks();
  const size_t items = static_cast<size_t>(n - 1) * K;
  const size_t own_begin = l.segment(r).begin;

  // Item i is the receive of chunk i % K at step i / K, which carries the
  // left neighbour's partial result of segment r - step - 2.
  auto item_step = [&](size_t i) { return static_cast<int>(i / K); };
  auto item_range = [&](size_t i) { return l.chunk(mod(r - item_step(i) - 2, n), i % K); };

  // No more slots than items (one item per rank and chunk is common in the
  // hierarchical all_reduce's slices), and not zero-filled: the scratch is
  // allocated per call, and filling 16 chunks would cost more than the data.
  const size_t window = std::min(kReduceWindow, std::max<size_t>(items, 1));
  const size_t slot_bytes = l.max_chunk() * es;
  std::unique_ptr<char[]> slots(new char[window * slot_bytes]);
  auto slot = [&](size_t i) { return slots.get() + (i % window) * slot_bytes; };

  std::vector<TransferHandle> recvs(items);
  auto post = [&](size_t i) {
    if (i >= items) return;
    const Range c = item_range(i);
    if (c.len == 0) return;  // the sender skips it too
    recvs[i] = p.irecv(left, make_tag(i % K, item_step(i)), slot(i), c.len * es);
  };

  for (size_t i = 0; i + 1 < window; ++i) post(i);

  // Step 0 sends this rank's own contribution of segment r - 1.
  std::vector<TransferHandle> sends;
  for (size_t k = 0; k < K; ++k) {
    const Range c = l.chunk(mod(r - 1, n), k);
    if (c.len == 0) continue;
    sends.push_back(p.isend(right, make_tag(k, 0), byte_ptr(a.local, c.begin, es), c.len * es));
  }

  for (size_t i = 0; i < items; ++i) {
    // The slot of item i + window - 1 was used by item i - 1, already reduced.
    post(i + window - 1);
    const Range c = item_range(i);
    if (c.len == 0) continue;
    Status st = p.wait(recvs[i]);
    if (!st.is_ok()) return st;
    recvs[i].reset();
    const int step = item_step(i);
    const void* mine = byte_ptr(a.local, c.begin, es);
    if (step < n - 2) {
      // A partial result: combine and pass it on at the next step.
      char* dst = byte_ptr(a.acc, c.begin, es);
      reduce_to(a.dtype, a.op, dst, slot(i), mine, c.len);
      sends.push_back(p.isend(right, make_tag(i % K, step + 1), dst, c.len * es));
    } else {
      // The last step brings segment r, which is now complete.
      char* dst = byte_ptr(a.own_out, c.begin - own_begin, es);
      reduce_to(a.dtype, a.op, dst, slot(i), mine, c.len);
      if (a.on_final) a.on_final(i % K, c, dst);
    }
  }
  return wait_all(p, sends);
}

Status ring_all_gather_core(Peers& p, const Layout& l, size_t es, void* buf, int step_base,
                            bool own_sent) {
  const int n = p.size();
  const int r = p.rank();
  const int right = mod(r + 1, n);
  const int left = mod(r - 1, n);
  const size_t K = l.chunks();
  const size_t items = static_cast<size_t>(n - 1) * K;

  // Item i: chunk i % K of segment r - step - 1 arrives at step i / K.
  auto item_step = [&](size_t i) { return static_cast<int>(i / K); };
  auto item_range = [&](size_t i) { return l.chunk(mod(r - item_step(i) - 1, n), i % K); };

  std::vector<TransferHandle> recvs(items);
  auto post = [&](size_t i) {
    if (i >= items) return;
    const Range c = item_range(i);
    if (c.len == 0) return;
    recvs[i] = p.irecv(left, make_tag(i % K, step_base + item_step(i)), byte_ptr(buf, c.begin, es),
                       c.len * es);
  };
  for (size_t i = 0; i < kGatherWindow; ++i) post(i);

  std::vector<TransferHandle> sends;
  if (!own_sent) {
    for (size_t k = 0; k < K; ++k) {
      const Range c = l.chunk(r, k);
      if (c.len == 0) continue;
      sends.push_back(
          p.isend(right, make_tag(k, step_base), byte_ptr(buf, c.begin, es), c.len * es));
    }
  }

  for (size_t i = 0; i < items; ++i) {
    post(i + kGatherWindow);
    const Range c = item_range(i);
    if (c.len == 0) continue;
    Status st = p.wait(recvs[i]);
    if (!st.is_ok()) return st;
    recvs[i].reset();
    const int step = item_step(i);
    if (step < n - 2) {
      sends.push_back(p.isend(right, make_tag(i % K, step_base + step + 1),
                              byte_ptr(buf, c.begin, es), c.len * es));
    }
  }
  return wait_all(p, sends);
}

// ---------------------------------------------------------------------------

Status ring_all_reduce(Peers& p, const AlgoOptions& o, const void* send, void* recv, size_t count,
                       kf_dtype_t dtype, kf_op_t op) {
  const int n = p.size();
  const int r = p.rank();
  const size_t es = dtype_size(dtype);
  const Layout l = Layout::balanced(count, n, chunk_elems(o, es));

  // The owner of each segment finishes KF_AVG before sharing it, so every
  // rank ends with the owner's bits. The all-gather's first step (sending the
  // owned segment) starts chunk by chunk as soon as each chunk is final.
  std::vector<TransferHandle> first_sends;
  RingReduceScatterArgs a;
  a.layout = &l;
  a.dtype = dtype;
  a.op = op;
  a.local = send;
  a.acc = recv;  // in place this is also `local`, which reduce_to allows
  a.own_out = byte_ptr(recv, l.segment(r).begin, es);
  a.on_final = [&](size_t k, Range c, void* result) {
    if (op == KF_AVG) finish_average(dtype, result, c.len, n);
    first_sends.push_back(p.isend(mod(r + 1, n), make_tag(k, n - 1), result, c.len * es));
  };
  KF_RETURN_IF_ERROR(ring_reduce_scatter_core(p, a));
  // The core has waited for its sends, so recv may now be overwritten.
  KF_RETURN_IF_ERROR(ring_all_gather_core(p, l, es, recv, n - 1, /*own_sent=*/true));
  return wait_all(p, first_sends);
}

Status ring_reduce(Peers& p, const AlgoOptions& o, const void* send, void* recv, size_t count,
                   kf_dtype_t dtype, kf_op_t op, int root) {
  const int n = p.size();
  const int r = p.rank();
  const size_t es = dtype_size(dtype);
  const Layout l = Layout::balanced(count, n, chunk_elems(o, es));
  const int gather_step = n - 1;  // after the reduce-scatter's steps

  // Root accumulates in its result buffer; the others need scratch.
  std::vector<char> scratch;
  void* acc = recv;
  if (r != root) {
    scratch.resize(count * es);
    acc = scratch.data();
  }

  std::vector<TransferHandle> to_root;
  RingReduceScatterArgs a;
  a.layout = &l;
  a.dtype = dtype;
  a.op = op;
  a.local = send;
  a.acc = acc;
  a.own_out = byte_ptr(acc, l.segment(r).begin, es);
  a.on_final = [&](size_t k, Range c, void* result) {
    if (op == KF_AVG) finish_average(dtype, result, c.len, n);
    if (r != root) {
      to_root.push_back(p.isend(root, make_tag(k, gather_step), result, c.len * es));
    }
  };
  KF_RETURN_IF_ERROR(ring_reduce_scatter_core(p, a));

  if (r == root) {
    // Posted only now: until the reduce-scatter ends, recv holds partial sums
    // that this rank still sends.
    std::vector<TransferHandle> recvs;
    for (int src = 0; src < n; ++src) {
      if (src == root) continue;
      for (size_t k = 0; k < l.chunks(); ++k) {
        const Range c = l.chunk(src, k);
        if (c.len == 0) continue;
        recvs.push_back(
            p.irecv(src, make_tag(k, gather_step), byte_ptr(recv, c.begin, es), c.len * es));
      }
    }
    KF_RETURN_IF_ERROR(wait_all(p, recvs));
  }
  return wait_all(p, to_root);
}

}  // namespace kf
