// scatter_perf: kf_scatter through the perf engine.
// recvcount = count / n; size = the root's send bytes (n * recvcount * esize);
// busbw = algbw * (n-1)/n; in place (kungfu.h: on root, recvbuf = sendbuf +
// root * recvcount; as nccl-tests, every rank uses sendbuf + rank * recvcount).
// Every rank fills its sendbuf with its own data, so a rank that receives
// nothing is caught in place too.
#include "common/data.h"
#include "common/engine.h"

namespace {

kfp::Counts get_counts(size_t bytes, size_t esize, int nranks, int rank) {
  kfp::Counts c;
  c.recv = c.param = bytes / esize / static_cast<uint64_t>(nranks);
  c.send = c.recv * static_cast<uint64_t>(nranks);
  c.inplace_send_in_recv = false;
  c.inplace_offset = static_cast<uint64_t>(rank) * c.recv;
  return c;
}

void init_input(const kfp::RunParams& p, void* send) {
  kft::fill_input(send, p.counts.send, p.dtype, kft::Kind::kMove, p.op, p.rank, 0, p.salt);
}

bool fill_expected(const kfp::RunParams& p, void* expected) {
  kft::fill_input(expected, p.counts.recv, p.dtype, kft::Kind::kMove, p.op, p.root,
                  static_cast<uint64_t>(p.rank) * p.counts.recv, p.salt);
  return true;
}

kf_status_t run(const kfp::RunParams& p, const void* send, void* recv) {
  return kf_scatter(p.comm, send, recv, p.counts.param, p.dtype, p.root);
}

double bus_factor(int nranks) {
  return static_cast<double>(nranks - 1) / nranks;
}

}  // namespace

int main(int argc, char** argv) {
  kfp::CollDesc coll;
  coll.name = "scatter";
  coll.uses_root = true;
  coll.get_counts = get_counts;
  coll.init_input = init_input;
  coll.fill_expected = fill_expected;
  coll.run = run;
  coll.bus_factor = bus_factor;
  return kfp::run_perf(coll, argc, argv);
}
