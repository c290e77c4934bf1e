// sendrecv_perf: every rank sends count elements to (r+1)%n and receives
// count elements from (r-1+n)%n, with kf_send / kf_recv.
// size = count * esize; busbw = algbw * 1.
//
// kf_send returns only when the buffer may be reused, so the order avoids a
// cycle of blocked senders: even ranks send then receive, odd ranks receive
// then send (with n odd, ranks n-1 and 0 are both even, and 0's send to the
// odd rank 1 completes first). With one rank the "exchange" is a local copy.
// In place (sendbuf == recvbuf) has no defined result, as in nccl-tests: it
// is timed but not checked (#wrong N/A).
#include <cstring>

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
  const int from = (p.rank - 1 + p.nranks) % p.nranks;
  kft::fill_input(expected, p.counts.recv, p.dtype, kft::Kind::kMove, p.op, from, 0, p.salt);
  return true;
}

kf_status_t run(const kfp::RunParams& p, const void* send, void* recv) {
  const uint64_t n = p.counts.param;
  if (p.nranks == 1) {
    if (n && send != recv) std::memcpy(recv, send, n * kft::element_size(p.dtype));
    return KF_SUCCESS;
  }
  const int to = (p.rank + 1) % p.nranks;
  const int from = (p.rank - 1 + p.nranks) % p.nranks;
  kf_status_t st;
  if (p.rank % 2 == 0) {
    st = kf_send(p.comm, send, n, p.dtype, to);
    if (st == KF_SUCCESS) st = kf_recv(p.comm, recv, n, p.dtype, from);
  } else {
    st = kf_recv(p.comm, recv, n, p.dtype, from);
    if (st == KF_SUCCESS) st = kf_send(p.comm, send, n, p.dtype, to);
  }
  return st;
}

double bus_factor(int /*nranks*/) {
  return 1.0;
}

}  // namespace

int main(int argc, char** argv) {
  kfp::CollDesc coll;
  coll.name = "sendrecv";
  coll.check_inplace = false;
  coll.get_counts = get_counts;
  coll.init_input = init_input;
  coll.fill_expected = fill_expected;
  coll.run = run;
  coll.bus_factor = bus_factor;
  return kfp::run_perf(coll, argc, argv);
}
