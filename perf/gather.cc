// gather_perf: kf_gather through the perf engine.
// sendcount = count / n; size = the root's recv bytes (n * sendcount * esize);
// busbw = algbw * (n-1)/n; in place (kungfu.h: on root, sendbuf = recvbuf +
// root * sendcount; as nccl-tests, every rank uses recvbuf + rank * sendcount).
// Only the root's recvbuf is checked.
#include "common/data.h"
#include "common/engine.h"

namespace {

kfp::Counts get_counts(size_t bytes, size_t esize, int nranks, int rank) {
  kfp::Counts c;
  c.send = c.param = bytes / esize / static_cast<uint64_t>(nranks);
  c.recv = c.send * static_cast<uint64_t>(nranks);
  c.inplace_send_in_recv = true;
  c.inplace_offset = static_cast<uint64_t>(rank) * c.send;
  return c;
}

void init_input(const kfp::RunParams& p, void* send) {
  kft::fill_input(send, p.counts.send, p.dtype, kft::Kind::kMove, p.op, p.rank, 0, p.salt);
}

bool fill_expected(const kfp::RunParams& p, void* expected) {
  if (p.rank != p.root) return false;
  const size_t block = p.counts.send * kft::element_size(p.dtype);
  for (int r = 0; r < p.nranks; ++r)
    kft::fill_input(static_cast<char*>(expected) + static_cast<size_t>(r) * block, p.counts.send,
                    p.dtype, kft::Kind::kMove, p.op, r, 0, p.salt);
  return true;
}

kf_status_t run(const kfp::RunParams& p, const void* send, void* recv) {
  return kf_gather(p.comm, send, recv, p.counts.param, p.dtype, p.root);
}

double bus_factor(int nranks) {
  return static_cast<double>(nranks - 1) / nranks;
}

}  // namespace

int main(int argc, char** argv) {
  kfp::CollDesc coll;
  coll.name = "gather";
  coll.uses_root = true;
  coll.get_counts = get_counts;
  coll.init_input = init_input;
  coll.fill_expected = fill_expected;
  coll.run = run;
  coll.bus_factor = bus_factor;
  return kfp::run_perf(coll, argc, argv);
}
