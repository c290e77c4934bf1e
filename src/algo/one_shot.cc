#include "algo/one_shot.h"

#include "algo/common.h"
#include "algo/reduce_kernels.h"

namespace kf {

void OneShotAllReduce::start(Peers& p, const void* send, size_t count, kf_dtype_t dtype,
                             kf_op_t op) {
  send_ = send;
  count_ = count;
  dtype_ = dtype;
  op_ = op;
  const int n = p.size(), me = p.rank();
  const size_t bytes = count * dtype_size(dtype);
  scratch_.resize(static_cast<size_t>(n) * bytes);
  if (bytes == 0) return;  // nothing travels; both ends know it
  for (int r = 0; r < n; ++r) {
    if (r != me) recvs_.push_back(p.irecv(r, Tag{0, 0}, scratch_.data() + r * bytes, bytes));
  }
  for (int r = 0; r < n; ++r) {
    if (r != me) sends_.push_back(p.isend(r, Tag{0, 0}, send, bytes));
  }
}

Status OneShotAllReduce::finish(Peers& p, void* recv) {
  KF_RETURN_IF_ERROR(wait_all(p, recvs_));
  KF_RETURN_IF_ERROR(wait_all(p, sends_));
  const int n = p.size(), me = p.rank();
  const size_t esize = dtype_size(dtype_), bytes = count_ * esize;
  if (bytes == 0) return Status::ok();
  if (n == 1) {
    copy_elems(recv, send_, count_, esize);
    return Status::ok();
  }
  // This rank's contribution, where it stays readable while recv fills: in
  // place, recv is overwritten from rank 0's turn on.
  const char* own = static_cast<const char*>(send_);
  if (recv == send_ && me != 0) {
    copy_elems(scratch_.data() + me * bytes, send_, count_, esize);
    own = scratch_.data() + me * bytes;
  }
  auto part = [&](int r) -> const void* { return r == me ? own : scratch_.data() + r * bytes; };
  // Rank order on every rank: the same bits everywhere.
  reduce_to(dtype_, op_, recv, part(0), part(1), count_);
  for (int r = 2; r < n; ++r) reduce_into(dtype_, op_, recv, part(r), count_);
  if (op_ == KF_AVG) finish_average(dtype_, recv, count_, n);
  return Status::ok();
}

Status one_shot_all_reduce(Peers& p, const void* send, void* recv, size_t count, kf_dtype_t dtype,
                           kf_op_t op) {
  OneShotAllReduce a;
  a.start(p, send, count, dtype, op);
  return a.finish(p, recv);
}

}  // namespace kf
