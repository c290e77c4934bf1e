#include "algo/ring_task.h"

#include <algorithm>
#include <cstring>

#include "algo/reduce_kernels.h"

namespace kf {

RingTask::RingTask(Peers& p, void* buf, size_t count, kf_dtype_t dtype, kf_op_t op,
                   size_t chunk_elems)
    : p_(p),
      buf_(static_cast<char*>(buf)),
      local_(static_cast<const char*>(buf)),
      dtype_(dtype),
      op_(op),
      es_(dtype_size(dtype)),
      count_(count),
      n_(p.size()),
      r_(p.rank()),
      // No chunk: one per segment (a segment is at most count long).
      layout_(Layout::balanced(count, p.size(),
                               chunk_elems > 0 ? chunk_elems : std::max<size_t>(count, 1))),
      chunks_(layout_.chunks()),
      items_(p.size() > 1 ? static_cast<size_t>(p.size() - 1) * layout_.chunks() : 0) {}

Range RingTask::rs_range(size_t i) const {
  return layout_.chunk(mod(r_ - step_of(i) - 2, n_), i % chunks_);
}

Range RingTask::ag_range(size_t i) const {
  return layout_.chunk(mod(r_ - step_of(i) - 1, n_), i % chunks_);
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
  if (scratch_ == nullptr || scratch_size_ < scratch_bytes()) {
    own_scratch_.reset(new char[scratch_bytes()]);  // not zero-filled
    scratch_ = own_scratch_.get();
  }
  rs_recvs_.assign(items_, nullptr);
  ag_recvs_.assign(items_, nullptr);
  for (size_t i = 0; i < items_; ++i) {
    const Range c = rs_range(i);
    if (c.len > 0) {  // (the sender skips an empty one too)
      rs_recvs_[i] = p_.irecv(left, make_tag(i % chunks_, step_of(i)), scratch_ + i * slot_bytes_,
                              c.len * es_);
    }
  }
  if (gather_now) post_gather();
  // Step 0 sends this rank's own contribution of segment r - 1.
  for (size_t k = 0; k < chunks_; ++k) {
    const Range c = layout_.chunk(mod(r_ - 1, n_), k);
    if (c.len > 0)
      sends_.push_back(p_.isend(right, make_tag(k, 0), local_ + c.begin * es_, c.len * es_));
  }
  reading_sends_ = sends_.size();
}

void RingTask::post_gather() {
  gather_posted_ = true;
  const int left = mod(r_ - 1, n_);
  for (size_t i = 0; i < items_; ++i) {
    const Range c = ag_range(i);
    if (c.len > 0) {
      ag_recvs_[i] = p_.irecv(left, make_tag(i % chunks_, n_ - 1 + step_of(i)),
                              buf_ + c.begin * es_, c.len * es_);
    }
  }
}

void RingTask::combine_and_pass(size_t i) {
  const int t = step_of(i);
  const Range c = rs_range(i);
  char* dst = buf_ + c.begin * es_;
  // "Left's partial op mine", as in the ring core.
  reduce_to(dtype_, op_, dst, scratch_ + i * slot_bytes_, local_ + c.begin * es_, c.len);
  // Step n-2 finishes this chunk of segment r: its owner (this rank)
  // averages it before sharing it, and the send starts the all-gather
  // (step n-1).
  if (t + 2 == n_ && op_ == KF_AVG) finish_average(dtype_, dst, c.len, n_);
  sends_.push_back(p_.isend(mod(r_ + 1, n_), make_tag(i % chunks_, t + 1), dst, c.len * es_));
  if (t + 2 < n_) reading_sends_ = sends_.size();
}

void RingTask::pass_on(size_t i) {
  const int t = step_of(i);
  if (t + 2 >= n_) return;  // the last segment to arrive goes no further
  const Range c = ag_range(i);
  sends_.push_back(
      p_.isend(mod(r_ + 1, n_), make_tag(i % chunks_, n_ + t), buf_ + c.begin * es_, c.len * es_));
}

Status RingTask::reduce_scatter() {
  reduced_ = true;
  for (size_t i = 0; i < items_; ++i) {
    if (rs_range(i).len == 0) continue;  // the sender skips it too
    KF_RETURN_IF_ERROR(p_.wait(rs_recvs_[i]));
    combine_and_pass(i);
  }
  return Status::ok();
}

Status RingTask::finish() {
  if (!reduced_) KF_RETURN_IF_ERROR(reduce_scatter());
  if (n_ < 2) return Status::ok();
  for (size_t i = 0; i < items_; ++i) {
    if (ag_range(i).len == 0) continue;
    KF_RETURN_IF_ERROR(p_.wait(ag_recvs_[i]));
    pass_on(i);
  }
  return wait_all(p_, sends_);
}

Status RingTask::advance(bool* done) {
  *done = false;
  Status st;
  for (; rs_next_ < items_; ++rs_next_) {
    if (rs_range(rs_next_).len == 0) continue;
    if (!p_.test(rs_recvs_[rs_next_], &st)) return Status::ok();
    KF_RETURN_IF_ERROR(st);
    combine_and_pass(rs_next_);
  }
  if (!gather_posted_) {
    // Only the sends that read what the all-gather writes: those of the own
    // segment (step n - 1) finish only once the right neighbour posted its
    // all-gather receives, which it may do only here too (a transport that
    // holds a send until its receive is posted would deadlock the ring).
    for (; sends_done_ < reading_sends_; ++sends_done_) {
      if (!p_.test(sends_[sends_done_], &st)) return Status::ok();
      KF_RETURN_IF_ERROR(st);
    }
    post_gather();
  }
  for (; ag_next_ < items_; ++ag_next_) {
    if (ag_range(ag_next_).len == 0) continue;
    if (!p_.test(ag_recvs_[ag_next_], &st)) return Status::ok();
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
