// alltoall_perf: kf_all_to_all through the perf engine.
// per-peer count = count / n; size = n * count/n * esize (send = recv bytes);
// busbw = algbw * (n-1)/n; in place: sendbuf == recvbuf.
// Rank r's block j holds input indices j*c .. (j+1)*c-1 of rank r, so block j
// of rank r's result must be rank j's indices r*c .. (r+1)*c-1.
#include "common/data.h"
#include "common/engine.h"

namespace {

kfp::Counts get_counts(size_t bytes, size_t esize, int nranks, int /*rank*/) {
  kfp::Counts c;
  c.param = bytes / esize / static_cast<uint64_t>(nranks);
  c.send = c.recv = c.param * static_cast<uint64_t>(nranks);
  return c;
}

void init_input(const kfp::RunParams& p, void* send) {
  kft::fill_input(send, p.counts.send, p.dtype, kft::Kind::kMove, p.op, p.rank, 0, p.salt);
}

bool fill_expected(const kfp::RunParams& p, void* expected) {
  const uint64_t c = p.counts.param;
  const size_t block = c * kft::element_size(p.dtype);
  for (int j = 0; j < p.nranks; ++j)
    kft::fill_input(static_cast<char*>(expected) + static_cast<size_t>(j) * block, c, p.dtype,
                    kft::Kind::kMove, p.op, j, static_cast<uint64_t>(p.rank) * c, p.salt);
  return true;
}

kf_status_t run(const kfp::RunParams& p, const void* send, void* recv) {
  return kf_all_to_all(p.comm, send, recv, p.counts.param, p.dtype);
}

double bus_factor(int nranks) {
  return static_cast<double>(nranks - 1) / nranks;
}

}  // namespace

int main(int argc, char** argv) {
  kfp::CollDesc coll;
  coll.name = "alltoall";
  coll.get_counts = get_counts;
  coll.init_input = init_input;
  coll.fill_expected = fill_expected;
  coll.run = run;
  coll.bus_factor = bus_factor;
  return kfp::run_perf(coll, argc, argv);
}
