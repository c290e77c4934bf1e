#include "algo/ring_task.h"

#include <cstring>

#include "algo/reduce_kernels.h"

namespace kf {

RingTask::RingTask(Peers& p, void* buf, size_t count, kf_dtype_t dtype, kf_op_t op,
                   char* scratch)
    : p_(p),
      buf_(static_cast<char*>(buf)),
      local_(static_cast<const char*>(buf)),
      dtype_(dtype),
      op_(op),
      es_(dtype_size(dtype)),
      count_(count),
      n_(p.size()),
      r_(p.rank()),
      // One chunk per segment: the caller's slices are the pipelining unit.
      layout_(Layout::balanced(count, p.size(), count > 0 ? count : 1)),
      scratch_(scratch) {}

size_t RingTask::scratch_bytes(size_t count, int nranks, kf_dtype_t dtype) {
  if (nranks < 2) return 0;
  const Layout l = Layout::balanced(count, nranks, count > 0 ? count : 1);
  return static_cast<size_t>(nranks - 1) * l.max_chunk() * dtype_size(dtype);
}

Range RingTask::segment(int s) const {
  return layout_.segment(mod(s, n_));
}

void RingTask::start(bool gather_now) {
  if (n_ < 2) {
    // One rank: the result is its own contribution.
    if (local_ != buf_) std::memcpy(buf_, local_, count_ * es_);
    return;
  }
  const int left = mod(r_ - 1, n_);
  const int right = mod(r_ + 1, n_);
  slot_bytes_ = layout_.max_chunk() * es_;
  if (scratch_ == nullptr) {
    own_scratch_.reset(new char[static_cast<size_t>(n_ - 1) * slot_bytes_]);  // not zero-filled
    scratch_ = own_scratch_.get();
  }
  rs_recvs_.assign(static_cast<size_t>(n_ - 1), nullptr);
  ag_recvs_.assign(static_cast<size_t>(n_ - 1), nullptr);
  for (int t = 0; t + 1 < n_; ++t) {
    // Reduce-scatter step t brings the left neighbour's partial result of
    // segment r - t - 2; all-gather step t brings finished segment r - t - 1.
    const Range rs = segment(r_ - t - 2);
    if (rs.len > 0) {
      rs_recvs_[static_cast<size_t>(t)] =
          p_.irecv(left, make_tag(0, t), scratch_ + static_cast<size_t>(t) * slot_bytes_,
                   rs.len * es_);
    }
  }
  if (gather_now) post_gather();
  const Range first = segment(r_ - 1);
  if (first.len > 0)
    sends_.push_back(p_.isend(right, make_tag(0, 0), local_ + first.begin * es_, first.len * es_));
}

void RingTask::post_gather() {
  gather_posted_ = true;
  const int left = mod(r_ - 1, n_);
  for (int t = 0; t + 1 < n_; ++t) {
    // All-gather step t brings finished segment r - t - 1.
    const Range ag = segment(r_ - t - 1);
    if (ag.len > 0) {
      ag_recvs_[static_cast<size_t>(t)] =
          p_.irecv(left, make_tag(0, n_ - 1 + t), buf_ + ag.begin * es_, ag.len * es_);
    }
  }
}

void RingTask::combine_and_pass(int t) {
  const Range c = segment(r_ - t - 2);
  char* dst = buf_ + c.begin * es_;
  // "Left's partial op mine", as in the ring core.
  reduce_to(dtype_, op_, dst, scratch_ + static_cast<size_t>(t) * slot_bytes_,
            local_ + c.begin * es_, c.len);
  // Step n-2 finishes segment r: its owner (this rank) averages it before
  // sharing it, and the send starts the all-gather (step n-1).
  if (t + 2 == n_ && op_ == KF_AVG) finish_average(dtype_, dst, c.len, n_);
  sends_.push_back(p_.isend(mod(r_ + 1, n_), make_tag(0, t + 1), dst, c.len * es_));
}

void RingTask::pass_on(int t) {
  if (t + 2 >= n_) return;  // the last segment to arrive goes no further
  const Range c = segment(r_ - t - 1);
  sends_.push_back(p_.isend(mod(r_ + 1, n_), make_tag(0, n_ + t), buf_ + c.begin * es_, c.len * es_));
}

Status RingTask::reduce_scatter() {
  reduced_ = true;
  if (n_ < 2) return Status::ok();
  for (int t = 0; t + 1 < n_; ++t) {
    if (segment(r_ - t - 2).len == 0) continue;  // the sender skips it too
    KF_RETURN_IF_ERROR(p_.wait(rs_recvs_[static_cast<size_t>(t)]));
    combine_and_pass(t);
  }
  return Status::ok();
}

Status RingTask::finish() {
  if (!reduced_) KF_RETURN_IF_ERROR(reduce_scatter());
  if (n_ < 2) return Status::ok();
  for (int t = 0; t + 1 < n_; ++t) {
    if (segment(r_ - t - 1).len == 0) continue;
    KF_RETURN_IF_ERROR(p_.wait(ag_recvs_[static_cast<size_t>(t)]));
    pass_on(t);
  }
  return wait_all(p_, sends_);
}

Status RingTask::advance(bool* done) {
  *done = false;
  Status st;
  for (; rs_next_ + 1 < n_; ++rs_next_) {
    if (segment(r_ - rs_next_ - 2).len == 0) continue;
    if (!p_.test(rs_recvs_[static_cast<size_t>(rs_next_)], &st)) return Status::ok();
    KF_RETURN_IF_ERROR(st);
    combine_and_pass(rs_next_);
  }
  if (!gather_posted_) {
    for (; sends_done_ < sends_.size(); ++sends_done_) {
      if (!p_.test(sends_[sends_done_], &st)) return Status::ok();
      KF_RETURN_IF_ERROR(st);
    }
    post_gather();
  }
  for (; ag_next_ + 1 < n_; ++ag_next_) {
    if (segment(r_ - ag_next_ - 1).len == 0) continue;
    if (!p_.test(ag_recvs_[static_cast<size_t>(ag_next_)], &st)) return Status::ok();
    KF_RETURN_IF_ERROR(st);
    pass_on(ag_next_);
  }
  for (; sends_done_ < sends_.size(); ++sends_done_) {
    if (!p_.test(sends_[sends_done_], &st)) return Status::ok();
    KF_RETURN_IF_ERROR(st);
  }
  *done = true;
  return Status::ok();
}

}  // namespace kf
