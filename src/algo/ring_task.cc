#include "algo/ring_task.h"

#include "algo/reduce_kernels.h"

namespace kf {

RingTask::RingTask(Peers& p, void* buf, size_t count, kf_dtype_t dtype, kf_op_t op)
    : p_(p), buf_(static_cast<char*>(buf)), dtype_(dtype), op_(op), es_(dtype_size(dtype)),
      n_(p.size()), r_(p.rank()),
      // One chunk per segment: the caller's slices are the pipelining unit.
      layout_(Layout::balanced(count, p.size(), count > 0 ? count : 1)) {}

Range RingTask::segment(int s) const { return layout_.segment(mod(s, n_)); }

void RingTask::start() {
  if (n_ < 2) return;
  const int left = mod(r_ - 1, n_);
  const int right = mod(r_ + 1, n_);
  slot_bytes_ = layout_.max_chunk() * es_;
  scratch_.resize(static_cast<size_t>(n_ - 1) * slot_bytes_);
  rs_recvs_.assign(static_cast<size_t>(n_ - 1), nullptr);
  ag_recvs_.assign(static_cast<size_t>(n_ - 1), nullptr);
  for (int t = 0; t + 1 < n_; ++t) {
    // Reduce-scatter step t brings the left neighbour's partial result of
    // segment r - t - 2; all-gather step t brings finished segment r - t - 1.
    const Range rs = segment(r_ - t - 2);
    if (rs.len > 0) {
      rs_recvs_[static_cast<size_t>(t)] =
          p_.irecv(left, make_tag(0, t), scratch_.data() + static_cast<size_t>(t) * slot_bytes_,
                   rs.len * es_);
    }
    const Range ag = segment(r_ - t - 1);
    if (ag.len > 0) {
      ag_recvs_[static_cast<size_t>(t)] =
          p_.irecv(left, make_tag(0, n_ - 1 + t), buf_ + ag.begin * es_, ag.len * es_);
    }
  }
  const Range first = segment(r_ - 1);
  if (first.len > 0) sends_.push_back(p_.isend(right, make_tag(0, 0), buf_ + first.begin * es_, first.len * es_));
}

Status RingTask::finish() {
  if (n_ < 2) return Status::ok();
  const int right = mod(r_ + 1, n_);
  for (int t = 0; t + 1 < n_; ++t) {
    const Range c = segment(r_ - t - 2);
    if (c.len == 0) continue;  // the sender skips it too
    KF_RETURN_IF_ERROR(p_.wait(rs_recvs_[static_cast<size_t>(t)]));
    char* dst = buf_ + c.begin * es_;
    // "Left's partial op mine", as in the ring core.
    reduce_to(dtype_, op_, dst, scratch_.data() + static_cast<size_t>(t) * slot_bytes_, dst, c.len);
    // Step n-2 finishes segment r: it starts the all-gather (step n-1).
    sends_.push_back(p_.isend(right, make_tag(0, t + 1), dst, c.len * es_));
  }
  for (int t = 0; t + 1 < n_; ++t) {
    const Range c = segment(r_ - t - 1);
    if (c.len == 0) continue;
    KF_RETURN_IF_ERROR(p_.wait(ag_recvs_[static_cast<size_t>(t)]));
    if (t + 2 < n_) {
      sends_.push_back(p_.isend(right, make_tag(0, n_ + t), buf_ + c.begin * es_, c.len * es_));
    }
  }
  return wait_all(p_, sends_);
}

}  // namespace kf
