// broadcast_perf: kf_broadcast through the perf engine.
// size = count * esize; busbw = algbw * 1; in place: sendbuf == recvbuf.
// Every rank fills its buffer with its own data, so a rank that receives
// nothing is caught.
#include "common/data.h"
#include "common/engine.h"

namespace {

kfp::Counts get_counts(size_t bytes, size_t esize, int /*nranks*/, int /*rank*/) {
  kfp::Counts c;
  c.send = c.recv = c.param = bytes / esize;
  return c;
}

void init_input(const kfp::RunParams& p, void* send) {
  kft::fill_input(send, p.counts.send, p.dtype, kft::Kind::kMove, p.op, p.rank, 0, p.salt);
}

bool fill_expected(const kfp::RunParams& p, void* expected) {
  kft::fill_input(expected, p.counts.recv, p.dtype, kft::Kind::kMove, p.op, p.root, 0, p.salt);
  return true;
}

kf_status_t run(const kfp::RunParams& p, const void* send, void* recv) {
  return kf_broadcast(p.comm, send, recv, p.counts.param, p.dtype, p.root);
}

double bus_factor(int /*nranks*/) {
  return 1.0;
}

}  // namespace

int main(int argc, char** argv) {
  kfp::CollDesc coll;
  coll.name = "broadcast";
  coll.uses_root = true;
  coll.get_counts = get_counts;
  coll.init_input = init_input;
  coll.fill_expected = fill_expected;
  coll.run = run;
  coll.bus_factor = bus_factor;
  return kfp::run_perf(coll, argc, argv);
}
