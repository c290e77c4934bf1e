// reduce_perf: kf_reduce through the perf engine.
// size = count * esize; busbw = algbw * 1; in place: sendbuf == recvbuf.
// Only the root's recvbuf is checked.
#include "common/data.h"
#include "common/engine.h"

namespace {

kfp::Counts get_counts(size_t bytes, size_t esize, int /*nranks*/, int /*rank*/) {
  kfp::Counts c;
  c.send = c.recv = c.param = bytes / esize;
  return c;
}

void init_input(const kfp::RunParams& p, void* send) {
  kft::fill_input(send, p.counts.send, p.dtype, kft::Kind::kReduce, p.op, p.rank, 0, p.salt);
}

bool fill_expected(const kfp::RunParams& p, void* expected) {
  if (p.rank != p.root) return false;
  kft::fill_expected_reduce(expected, p.counts.recv, p.dtype, p.op, p.nranks, 0, p.salt);
  return true;
}

kf_status_t run(const kfp::RunParams& p, const void* send, void* recv) {
  return kf_reduce(p.comm, send, recv, p.counts.param, p.dtype, p.op, p.root);
}

double bus_factor(int /*nranks*/) {
  return 1.0;
}

}  // namespace

int main(int argc, char** argv) {
  kfp::CollDesc coll;
  coll.name = "reduce";
  coll.uses_op = true;
  coll.uses_root = true;
  coll.get_counts = get_counts;
  coll.init_input = init_input;
  coll.fill_expected = fill_expected;
  coll.run = run;
  coll.bus_factor = bus_factor;
  return kfp::run_perf(coll, argc, argv);
}
