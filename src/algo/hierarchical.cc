// Hierarchical all_reduce (see strategy.h), for a layout of H hosts where
// host h has L_h ranks and L = min L_h:
//  1. intra-host reduce-scatter over the host's ranks (shared memory): the
//     message is cut into L balanced shards and local rank j < L ends with
//     shard j reduced over its host. Ranks with local rank >= L own an empty
//     segment: they only pass partial sums along the host's ring.
//  2. inter-host: local rank j of every host all_reduces shard j (cross
//     group j). The L cross groups run at once, one per local rank, so each
//     inter-host byte crosses once and the traffic spreads over the ranks
//     (and NICs) of each host.
//  3. intra-host all-gather of the shards.
// On 2 hosts x 2 ranks a flat ring crosses the inter-host link with 1.5x
// the bytes this needs (perf/README.md).
//
// Pipelining: a message of more than one slice runs slice by slice, with
// step 2 split so its messages flow during the next slice's intra-host work:
//   rs(0) start(0) | rs(1) start(1) finish(0) ag(0) | rs(2) start(2) finish(1) ag(1) | ...
// Every rank runs the same sequence, each phase only waits on messages of
// the same phase from ranks that entered it, so the schedule cannot
// deadlock. A single slice runs the three phases one after the other, with
// the flat all_reduce (which picks recursive doubling for small shards) in
// step 2.
//
// KF_AVG: steps 1 and 2 sum; the shard owner divides by the whole size
// before step 3, so every rank gets the owner's bits.
#include <algorithm>
#include <memory>
#include <vector>

#include "algo/common.h"
#include "algo/reduce_kernels.h"
#include "algo/ring.h"
#include "algo/ring_task.h"
#include "algo/strategy.h"
#include "algo/sub_peers.h"

namespace kf {
namespace {

// Phases 1 .. 3 * kMaxSlices: three per slice.
constexpr size_t kMaxSlices = 4096;

class HierAllReduce {
 public:
  HierAllReduce(Peers& p, const AlgoOptions& o, const HostLayout& hl, const void* send, void* recv,
                size_t count, kf_dtype_t dtype, kf_op_t op)
      : p_(p), o_(o), hl_(hl), send_(send), recv_(recv), count_(count), dtype_(dtype), op_(op),
        sum_op_(op == KF_AVG ? KF_SUM : op), es_(dtype_size(dtype)), host_(hl.host_of(p.rank())),
        lr_(hl.local_rank(p.rank())), L_(hl.min_local_size()),
        local_(hl.local_group(host_)), Lh_(static_cast<int>(local_.size())) {}

  Status run(size_t slice_bytes);

 private:
  struct Slice {
    size_t begin = 0;
    size_t len = 0;
    Layout layout;  // this host's segments within the slice
    std::unique_ptr<SubPeers> cross;
    std::unique_ptr<RingTask> task;
  };
  Slice make_slice(size_t s, size_t slices) const;
  Range my_shard(const Slice& sl) const { return sl.layout.segment(lr_); }
  bool in_cross() const { return lr_ < L_ && hl_.host_count() > 1; }
  uint32_t phase(size_t slice, uint32_t which) const { return static_cast<uint32_t>(1 + 3 * slice) + which; }

  Status reduce_scatter(size_t s, Slice& sl);
  Status all_gather(size_t s, Slice& sl);
  void finish_avg(const Slice& sl);

  Peers& p_;
  const AlgoOptions& o_;
  const HostLayout& hl_;
  const void* send_;
  void* recv_;
  const size_t count_;
  const kf_dtype_t dtype_;
  const kf_op_t op_;
  const kf_op_t sum_op_;
  const size_t es_;
  const int host_;
  const int lr_;
  const int L_;
  const std::vector<int>& local_;
  const int Lh_;
};

HierAllReduce::Slice HierAllReduce::make_slice(size_t s, size_t slices) const {
  Slice sl;
  const Range r = balanced_piece(count_, slices, s);
  sl.begin = r.begin;
  sl.len = r.len;
  // L shards, the same split on every host, then an empty segment for every
  // rank of this host beyond L.
  std::vector<Range> segs;
  for (int j = 0; j < Lh_; ++j) {
    segs.push_back(j < L_ ? balanced_piece(r.len, static_cast<size_t>(L_), static_cast<size_t>(j))
                          : Range{r.len, 0});
  }
  sl.layout = Layout::custom(std::move(segs), chunk_elems(o_, es_));
  return sl;
}

Status HierAllReduce::reduce_scatter(size_t s, Slice& sl) {
  const void* in = byte_ptr(send_, sl.begin, es_);
  void* out = byte_ptr(recv_, sl.begin, es_);
  if (Lh_ == 1) {
    copy_elems(out, in, sl.len, es_);
    return Status::ok();
  }
  SubPeers local(p_, local_, phase(s, 0));
  RingReduceScatterArgs a;
  a.layout = &sl.layout;
  a.dtype = dtype_;
  a.op = sum_op_;
  a.local = in;
  a.acc = out;  // in place this is also `local`, which reduce_to allows
  a.own_out = byte_ptr(out, my_shard(sl).begin, es_);
  return ring_reduce_scatter_core(local, a);
}

Status HierAllReduce::all_gather(size_t s, Slice& sl) {
  if (Lh_ == 1) return Status::ok();
  SubPeers local(p_, local_, phase(s, 2));
  return ring_all_gather_core(local, sl.layout, es_, byte_ptr(recv_, sl.begin, es_),
                              /*step_base=*/0, /*own_sent=*/false);
}

void HierAllReduce::finish_avg(const Slice& sl) {
  if (op_ != KF_AVG) return;
  const Range sh = my_shard(sl);
  finish_average(dtype_, byte_ptr(recv_, sl.begin + sh.begin, es_), sh.len, p_.size());
}

Status HierAllReduce::run(size_t slice_bytes) {
  const size_t bytes = count_ * es_;
  size_t slices = std::max<size_t>(1, (bytes + slice_bytes - 1) / std::max<size_t>(1, slice_bytes));
  slices = std::min({slices, kMaxSlices, count_});

  if (slices == 1) {
    Slice sl = make_slice(0, 1);
    KF_RETURN_IF_ERROR(reduce_scatter(0, sl));
    if (in_cross()) {
      SubPeers cross(p_, hl_.cross_group(lr_), phase(0, 1));
      void* shard = byte_ptr(recv_, sl.begin + my_shard(sl).begin, es_);
      KF_RETURN_IF_ERROR(kf::all_reduce(cross, o_, shard, shard, my_shard(sl).len, dtype_, sum_op_));
    }
    finish_avg(sl);
    return all_gather(0, sl);
  }

  std::vector<Slice> sl(slices);
  // finish(s) and the all-gather of slice s, once slice s + 1 is under way.
  auto complete = [&](size_t s) -> Status {
    if (sl[s].task) KF_RETURN_IF_ERROR(sl[s].task->finish());
    finish_avg(sl[s]);
    KF_RETURN_IF_ERROR(all_gather(s, sl[s]));
    sl[s] = Slice();  // frees the ring's scratch
    return Status::ok();
  };
  for (size_t s = 0; s <= slices; ++s) {
    if (s < slices) {
      sl[s] = make_slice(s, slices);
      KF_RETURN_IF_ERROR(reduce_scatter(s, sl[s]));
      if (in_cross()) {
        sl[s].cross = std::make_unique<SubPeers>(p_, hl_.cross_group(lr_), phase(s, 1));
        sl[s].task = std::make_unique<RingTask>(
            *sl[s].cross, byte_ptr(recv_, sl[s].begin + my_shard(sl[s]).begin, es_),
            my_shard(sl[s]).len, dtype_, sum_op_);
        sl[s].task->start();
      }
    }
    if (s > 0) KF_RETURN_IF_ERROR(complete(s - 1));
  }
  return Status::ok();
}

}  // namespace

Status hier_all_reduce(Peers& p, const AlgoOptions& o, const HostLayout& hosts, size_t slice_bytes,
                       const void* send, void* recv, size_t count, kf_dtype_t dtype, kf_op_t op) {
  if (count == 0) return Status::ok();
  if (p.size() == 1) {
    copy_elems(recv, send, count, dtype_size(dtype));
    return Status::ok();
  }
  return HierAllReduce(p, o, hosts, send, recv, count, dtype, op).run(slice_bytes);
}

}  // namespace kf
