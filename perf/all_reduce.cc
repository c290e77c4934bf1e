// all_reduce_perf: kf_all_reduce through the perf engine.
#include "common/data.h"
#include "common/engine.h"

namespace {

kfp::Counts get_counts(size_t bytes, size_t esize, int /*nranks*/) {
  kfp::Counts c;
  c.send = c.recv = c.param = bytes / esize;
  c.inplace_send_in_recv = true;
  c.inplace_offset = 0;  // in place: sendbuf == recvbuf
  return c;
}

void init_input(const kfp::RunParams& p, void* send) {
  kft::fill_input(send, p.counts.send, p.dtype, kft::Kind::kReduce, p.op, p.rank, 0, p.salt);
}

bool fill_expected(const kfp::RunParams& p, void* expected) {
  kft::fill_expected_reduce(expected, p.counts.recv, p.dtype, p.op, p.nranks, 0, p.salt);
  return true;
}

kf_status_t run(const kfp::RunParams& p, const void* send, void* recv) {
  return kf_all_reduce(p.comm, send, recv, p.counts.param, p.dtype, p.op);
}

double bus_factor(int nranks) {
  return nranks > 1 ? 2.0 * (nranks - 1) / nranks : 0.0;
}

}  // namespace

int main(int argc, char** argv) {
  const kfp::CollDesc coll{"all_reduce", true,          false, get_counts,
                           init_input,   fill_expected, run,   bus_factor};
  return kfp::run_perf(coll, argc, argv);
}
