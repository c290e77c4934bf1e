// Conformance matrix, in one launch, for the number of ranks it runs with:
// every collective x every dtype x every applicable op x sizes {0, 1, 37,
// 1 MiB / esize + 3} x out-of-place and in-place x roots (all roots for small
// sizes, 0 and size-1 for the big one), with exact checks (KF_AVG on floats
// within avg_tolerance(): relative 1e-2 for half types, 1e-6 float, 1e-12
// double; integer avg truncates toward zero and is checked exactly).
// Also checks that out-of-place inputs are not modified and that nothing is
// written outside the documented buffers (guard zones).
//
// usage: conformance [--coll NAME[,NAME...]] [--dtype NAME] [--op NAME] [--no-big]
//                    [--verbose] [--np N]
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "data.h"
#include "mp_common.h"

namespace {

using kfmp::Buf;
using kft::Kind;

// The collectives under test, by the names --coll takes. Deliberately not
// sched/op_kind.h: this test sees the public API only, and OpKind is the
// library's wire numbering (from 1, with sparse kinds at 101 and 102; its
// name for kSendRecv is "send/recv"), not a dense list to loop over.
enum Coll {
  kAllReduce,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kGather,
  kScatter,
  kBarrier,
  kSendRecv,
  kCollCount
};
const char* const kCollNames[kCollCount] = {"all_reduce",     "broadcast",  "reduce", "all_gather",
                                            "reduce_scatter", "all_to_all", "gather", "scatter",
                                            "barrier",        "sendrecv"};
bool reduces(Coll c) {
  return c == kAllReduce || c == kReduce || c == kReduceScatter;
}
bool rooted(Coll c) {
  return c == kBroadcast || c == kReduce || c == kGather || c == kScatter;
}

struct Case {
  Coll coll;
  kf_dtype_t dtype;
  kf_op_t op;
  uint64_t count;
  int root;
  bool inplace;
  uint32_t salt;
};

struct Filter {
  unsigned colls = ~0u;  // bit c: run collective c (--coll NAME[,NAME...])
  int dtype = -1, op = -1;
  bool big = true;
  bool verbose = false;
  int expect_np = 0;  // --np N: fail unless the communicator has N ranks
};

class Runner {
 public:
  Runner(kf_comm_t comm, int rank, int n) : comm_(comm), rank_(rank), n_(n) {}
  void run(const Filter& f);
  long passed() const { return passed_; }
  long failed() const { return failed_; }
  bool broken() const { return broken_; }

 private:
  void run_case(const Case& c);
  void run_null_zero(Coll coll, uint32_t salt);
  // Fills count elements of this rank's (or `rank`'s) input.
  Buf input(const Case& c, Kind kind, int rank, uint64_t first, uint64_t count) const {
    Buf b(count * es(c));
    kft::fill_input(b.data(), count, c.dtype, kind, c.op, rank, first, c.salt);
    return b;
  }
  static size_t es(const Case& c) { return kft::element_size(c.dtype); }
  void check(const Case& c, const char* what, const void* got, const void* expected, uint64_t count,
             kf_op_t cmp_op);
  void check_guards(const Case& c, const char* what, const Buf& b);
  void fail(const Case& c, const std::string& msg);
  std::string describe(const Case& c) const;

  kf_comm_t comm_;
  int rank_, n_;
  long passed_ = 0, failed_ = 0;
  int printed_ = 0;
  bool broken_ = false;
  bool case_failed_ = false;
};

std::string Runner::describe(const Case& c) const {
  char s[200];
  std::snprintf(s, sizeof s, "%s dtype=%s op=%s count=%" PRIu64 " root=%d %s", kCollNames[c.coll],
                kft::dtype_name(c.dtype), reduces(c.coll) ? kft::op_name(c.op) : "-", c.count,
                rooted(c.coll) ? c.root : -1, c.inplace ? "in-place" : "out-of-place");
  return s;
}

void Runner::fail(const Case& c, const std::string& msg) {
  case_failed_ = true;
  if (printed_++ < 30)
    std::printf("FAIL rank %d/%d: %s: %s\n", rank_, n_, describe(c).c_str(), msg.c_str());
  else if (printed_ == 31)
    std::printf("rank %d: further failures not printed\n", rank_);
}

void Runner::check(const Case& c, const char* what, const void* got, const void* expected,
                   uint64_t count, kf_op_t cmp_op) {
  uint64_t first = 0;
  const uint64_t wrong = kft::count_wrong(got, expected, count, c.dtype, cmp_op, &first);
  if (wrong == 0) return;
  char s[300];
  std::snprintf(s, sizeof s,
                "%s: %" PRIu64 " of %" PRIu64 " elements wrong, first at [%" PRIu64
                "]: expected %.17g got %.17g",
                what, wrong, count, first, kft::element_as_double(expected, first, c.dtype),
                kft::element_as_double(got, first, c.dtype));
  fail(c, s);
}

void Runner::check_guards(const Case& c, const char* what, const Buf& b) {
  if (!b.guards_ok())
    fail(c, std::string(what) + ": write outside the buffer (guard zone changed)");
}

void Runner::run_case(const Case& c) {
  case_failed_ = false;
  const uint64_t cnt = c.count;
  const int r = rank_, n = n_;
  const bool is_root = r == c.root;
  const size_t e = es(c);
  kf_status_t st = KF_SUCCESS;
  switch (c.coll) {
    case kAllReduce: {
      Buf send = input(c, Kind::kReduce, r, 0, cnt);
      const Buf send_copy = send;  // to check that the call left it alone
      Buf exp(cnt * e);
      kft::fill_expected_reduce(exp.data(), cnt, c.dtype, c.op, n, 0, c.salt);
      if (c.inplace) {
        st = kf_all_reduce(comm_, send.data(), send.data(), cnt, c.dtype, c.op);
        if (st == KF_SUCCESS) check(c, "recvbuf", send.data(), exp.data(), cnt, c.op);
        check_guards(c, "buf", send);
      } else {
        Buf recv(cnt * e);
        st = kf_all_reduce(comm_, send.data(), recv.data(), cnt, c.dtype, c.op);
        if (st == KF_SUCCESS) {
          check(c, "recvbuf", recv.data(), exp.data(), cnt, c.op);
          const Buf& orig = send_copy;
          check(c, "sendbuf modified", send.data(), orig.data(), cnt, KF_SUM);
        }
        check_guards(c, "sendbuf", send);
        check_guards(c, "recvbuf", recv);
      }
      break;
    }
    case kBroadcast: {
      Buf exp = input(c, Kind::kMove, c.root, 0, cnt);
      if (is_root) {
        Buf send = input(c, Kind::kMove, r, 0, cnt);
        if (c.inplace) {
          st = kf_broadcast(comm_, send.data(), send.data(), cnt, c.dtype, c.root);
          if (st == KF_SUCCESS) check(c, "recvbuf (root)", send.data(), exp.data(), cnt, KF_SUM);
        } else {
          Buf recv(cnt * e);
          st = kf_broadcast(comm_, send.data(), recv.data(), cnt, c.dtype, c.root);
          if (st == KF_SUCCESS) {
            check(c, "recvbuf (root)", recv.data(), exp.data(), cnt, KF_SUM);
            check(c, "sendbuf modified", send.data(), exp.data(), cnt, KF_SUM);
          }
          check_guards(c, "recvbuf", recv);
        }
        check_guards(c, "sendbuf", send);
      } else {
        Buf recv(cnt * e);
        // sendbuf is ignored on non-roots: pass NULL, as documented.
        st = kf_broadcast(comm_, nullptr, recv.data(), cnt, c.dtype, c.root);
        if (st == KF_SUCCESS) check(c, "recvbuf", recv.data(), exp.data(), cnt, KF_SUM);
        check_guards(c, "recvbuf", recv);
      }
      break;
    }
    case kReduce: {
      Buf send = input(c, Kind::kReduce, r, 0, cnt);
      const Buf send_copy = send;  // to check that the call left it alone
      if (is_root) {
        Buf exp(cnt * e);
        kft::fill_expected_reduce(exp.data(), cnt, c.dtype, c.op, n, 0, c.salt);
        if (c.inplace) {
          st = kf_reduce(comm_, send.data(), send.data(), cnt, c.dtype, c.op, c.root);
          if (st == KF_SUCCESS) check(c, "recvbuf (root)", send.data(), exp.data(), cnt, c.op);
        } else {
          Buf recv(cnt * e);
          st = kf_reduce(comm_, send.data(), recv.data(), cnt, c.dtype, c.op, c.root);
          if (st == KF_SUCCESS) check(c, "recvbuf (root)", recv.data(), exp.data(), cnt, c.op);
          check_guards(c, "recvbuf", recv);
        }
      } else {
        // recvbuf is ignored on non-roots: pass NULL, as documented.
        st = kf_reduce(comm_, send.data(), nullptr, cnt, c.dtype, c.op, c.root);
      }
      if (st == KF_SUCCESS && !(is_root && c.inplace)) {
        const Buf& orig = send_copy;
        check(c, "sendbuf modified", send.data(), orig.data(), cnt, KF_SUM);
      }
      check_guards(c, "sendbuf", send);
      break;
    }
    case kAllGather: {
      Buf exp(n * cnt * e);
      for (int j = 0; j < n; ++j)
        kft::fill_input(exp.data() + j * cnt * e, cnt, c.dtype, Kind::kMove, c.op, j, 0, c.salt);
      Buf recv(n * cnt * e);
      if (c.inplace) {
        kft::fill_input(recv.data() + r * cnt * e, cnt, c.dtype, Kind::kMove, c.op, r, 0, c.salt);
        st = kf_all_gather(comm_, recv.data() + r * cnt * e, recv.data(), cnt, c.dtype);
      } else {
        Buf send = input(c, Kind::kMove, r, 0, cnt);
        st = kf_all_gather(comm_, send.data(), recv.data(), cnt, c.dtype);
        if (st == KF_SUCCESS)
          check(c, "sendbuf modified", send.data(), exp.data() + r * cnt * e, cnt, KF_SUM);
        check_guards(c, "sendbuf", send);
      }
      if (st == KF_SUCCESS) check(c, "recvbuf", recv.data(), exp.data(), n * cnt, KF_SUM);
      check_guards(c, "recvbuf", recv);
      break;
    }
    case kReduceScatter: {
      Buf send = input(c, Kind::kReduce, r, 0, n * cnt);
      const Buf send_copy = send;  // to check that the call left it alone
      Buf exp(cnt * e);
      kft::fill_expected_reduce(exp.data(), cnt, c.dtype, c.op, n, r * cnt, c.salt);
      if (c.inplace) {
        st = kf_reduce_scatter(comm_, send.data(), send.data() + r * cnt * e, cnt, c.dtype, c.op);
        if (st == KF_SUCCESS) check(c, "recvbuf", send.data() + r * cnt * e, exp.data(), cnt, c.op);
      } else {
        Buf recv(cnt * e);
        st = kf_reduce_scatter(comm_, send.data(), recv.data(), cnt, c.dtype, c.op);
        if (st == KF_SUCCESS) {
          check(c, "recvbuf", recv.data(), exp.data(), cnt, c.op);
          const Buf& orig = send_copy;
          check(c, "sendbuf modified", send.data(), orig.data(), n * cnt, KF_SUM);
        }
        check_guards(c, "recvbuf", recv);
      }
      check_guards(c, "sendbuf", send);
      break;
    }
    case kAllToAll: {
      // Block j of rank s's sendbuf is input(s, j*cnt ..); rank r receives
      // input(j, r*cnt ..) from every rank j into block j.
      Buf send = input(c, Kind::kMove, r, 0, n * cnt);
      const Buf send_copy = send;  // to check that the call left it alone
      Buf exp(n * cnt * e);
      for (int j = 0; j < n; ++j)
        kft::fill_input(exp.data() + j * cnt * e, cnt, c.dtype, Kind::kMove, c.op, j, r * cnt,
                        c.salt);
      if (c.inplace) {
        st = kf_all_to_all(comm_, send.data(), send.data(), cnt, c.dtype);
        if (st == KF_SUCCESS) check(c, "recvbuf", send.data(), exp.data(), n * cnt, KF_SUM);
      } else {
        Buf recv(n * cnt * e);
        st = kf_all_to_all(comm_, send.data(), recv.data(), cnt, c.dtype);
        if (st == KF_SUCCESS) {
          check(c, "recvbuf", recv.data(), exp.data(), n * cnt, KF_SUM);
          const Buf& orig = send_copy;
          check(c, "sendbuf modified", send.data(), orig.data(), n * cnt, KF_SUM);
        }
        check_guards(c, "recvbuf", recv);
      }
      check_guards(c, "sendbuf", send);
      break;
    }
    case kGather: {
      if (is_root) {
        Buf exp(n * cnt * e);
        for (int j = 0; j < n; ++j)
          kft::fill_input(exp.data() + j * cnt * e, cnt, c.dtype, Kind::kMove, c.op, j, 0, c.salt);
        Buf recv(n * cnt * e);
        if (c.inplace) {
          kft::fill_input(recv.data() + r * cnt * e, cnt, c.dtype, Kind::kMove, c.op, r, 0, c.salt);
          st = kf_gather(comm_, recv.data() + r * cnt * e, recv.data(), cnt, c.dtype, c.root);
        } else {
          Buf send = input(c, Kind::kMove, r, 0, cnt);
          st = kf_gather(comm_, send.data(), recv.data(), cnt, c.dtype, c.root);
          if (st == KF_SUCCESS)
            check(c, "sendbuf modified", send.data(), exp.data() + r * cnt * e, cnt, KF_SUM);
          check_guards(c, "sendbuf", send);
        }
        if (st == KF_SUCCESS) check(c, "recvbuf (root)", recv.data(), exp.data(), n * cnt, KF_SUM);
        check_guards(c, "recvbuf", recv);
      } else {
        Buf send = input(c, Kind::kMove, r, 0, cnt);
        const Buf send_copy = send;  // to check that the call left it alone
        st = kf_gather(comm_, send.data(), nullptr, cnt, c.dtype, c.root);
        if (st == KF_SUCCESS) {
          const Buf& orig = send_copy;
          check(c, "sendbuf modified", send.data(), orig.data(), cnt, KF_SUM);
        }
        check_guards(c, "sendbuf", send);
      }
      break;
    }
    case kScatter: {
      // Block j of root's sendbuf is input(root, j*cnt ..).
      Buf exp = input(c, Kind::kMove, c.root, r * cnt, cnt);
      if (is_root) {
        Buf send = input(c, Kind::kMove, r, 0, n * cnt);
        const Buf send_copy = send;  // to check that the call left it alone
        if (c.inplace) {
          st = kf_scatter(comm_, send.data(), send.data() + r * cnt * e, cnt, c.dtype, c.root);
          if (st == KF_SUCCESS) {
            const Buf& orig = send_copy;
            check(c, "buf (root)", send.data(), orig.data(), n * cnt, KF_SUM);
          }
        } else {
          Buf recv(cnt * e);
          st = kf_scatter(comm_, send.data(), recv.data(), cnt, c.dtype, c.root);
          if (st == KF_SUCCESS) {
            check(c, "recvbuf (root)", recv.data(), exp.data(), cnt, KF_SUM);
            const Buf& orig = send_copy;
            check(c, "sendbuf modified", send.data(), orig.data(), n * cnt, KF_SUM);
          }
          check_guards(c, "recvbuf", recv);
        }
        check_guards(c, "sendbuf", send);
      } else {
        Buf recv(cnt * e);
        st = kf_scatter(comm_, nullptr, recv.data(), cnt, c.dtype, c.root);
        if (st == KF_SUCCESS) check(c, "recvbuf", recv.data(), exp.data(), cnt, KF_SUM);
        check_guards(c, "recvbuf", recv);
      }
      break;
    }
    case kBarrier:
      st = kf_barrier(comm_);
      break;
    case kSendRecv: {
      // Ring: send to r+1, receive from r-1. Even ranks send first and odd
      // ranks receive first, so a rendezvous send cannot deadlock.
      const int next = (r + 1) % n, prev = (r + n - 1) % n;
      Buf send = input(c, Kind::kMove, r, 0, cnt);
      const Buf send_copy = send;  // to check that the call left it alone
      Buf recv(cnt * e);
      Buf exp = input(c, Kind::kMove, prev, 0, cnt);
      if (r % 2 == 0) {
        st = kf_send(comm_, send.data(), cnt, c.dtype, next);
        if (st == KF_SUCCESS) st = kf_recv(comm_, recv.data(), cnt, c.dtype, prev);
      } else {
        st = kf_recv(comm_, recv.data(), cnt, c.dtype, prev);
        if (st == KF_SUCCESS) st = kf_send(comm_, send.data(), cnt, c.dtype, next);
      }
      if (st == KF_SUCCESS) {
        check(c, "recvbuf", recv.data(), exp.data(), cnt, KF_SUM);
        check(c, "sendbuf modified", send.data(), send_copy.data(), cnt, KF_SUM);
      }
      check_guards(c, "sendbuf", send);
      check_guards(c, "recvbuf", recv);
      break;
    }
    default:
      break;
  }
  if (st != KF_SUCCESS) {
    fail(c, std::string("returned ") + kf_status_string(st) + ": " + kf_comm_last_error(comm_));
    // A peer failure breaks the communicator: later cases would only time out.
    if (st == KF_ERR_REMOTE || st == KF_ERR_TIMEOUT || st == KF_ERR_ABORTED ||
        st == KF_ERR_SYSTEM || st == KF_ERR_INTERNAL)
      broken_ = true;
  }
  if (case_failed_)
    ++failed_;
  else
    ++passed_;
}

// kungfu.h: "A count of 0 is valid and returns at once after argument
// checks", and NULL buffers are an error only with count > 0.
void Runner::run_null_zero(Coll coll, uint32_t salt) {
  const Case c{coll, KF_FLOAT32, KF_SUM, 0, n_ - 1, false, salt};
  case_failed_ = false;
  kf_status_t st = KF_SUCCESS;
  const int root = n_ - 1, next = (rank_ + 1) % n_, prev = (rank_ + n_ - 1) % n_;
  switch (coll) {
    case kAllReduce:
      st = kf_all_reduce(comm_, nullptr, nullptr, 0, c.dtype, c.op);
      break;
    case kBroadcast:
      st = kf_broadcast(comm_, nullptr, nullptr, 0, c.dtype, root);
      break;
    case kReduce:
      st = kf_reduce(comm_, nullptr, nullptr, 0, c.dtype, c.op, root);
      break;
    case kAllGather:
      st = kf_all_gather(comm_, nullptr, nullptr, 0, c.dtype);
      break;
    case kReduceScatter:
      st = kf_reduce_scatter(comm_, nullptr, nullptr, 0, c.dtype, c.op);
      break;
    case kAllToAll:
      st = kf_all_to_all(comm_, nullptr, nullptr, 0, c.dtype);
      break;
    case kGather:
      st = kf_gather(comm_, nullptr, nullptr, 0, c.dtype, root);
      break;
    case kScatter:
      st = kf_scatter(comm_, nullptr, nullptr, 0, c.dtype, root);
      break;
    case kSendRecv:
      if (rank_ % 2 == 0) {
        st = kf_send(comm_, nullptr, 0, c.dtype, next);
        if (st == KF_SUCCESS) st = kf_recv(comm_, nullptr, 0, c.dtype, prev);
      } else {
        st = kf_recv(comm_, nullptr, 0, c.dtype, prev);
        if (st == KF_SUCCESS) st = kf_send(comm_, nullptr, 0, c.dtype, next);
      }
      break;
    default:
      return;
  }
  if (st != KF_SUCCESS)
    fail(c, std::string("count 0 with NULL buffers returned ") + kf_status_string(st) + ": " +
                kf_comm_last_error(comm_));
  if (case_failed_)
    ++failed_;
  else
    ++passed_;
}

void Runner::run(const Filter& f) {
  uint32_t salt = 0;
  for (int ci = 0; ci < kCollCount && !broken_; ++ci) {
    const Coll coll = static_cast<Coll>(ci);
    if ((f.colls & (1u << ci)) == 0) continue;
    if (coll == kSendRecv && n_ < 2) continue;  // a rank cannot send to itself
    const long failed_before = failed_, passed_before = passed_;
    if (coll == kBarrier) {
      for (int i = 0; i < 10 && !broken_; ++i)
        run_case(Case{coll, KF_UINT8, KF_SUM, 0, 0, false, ++salt});
    } else if (f.dtype < 0 && f.op < 0) {
      run_null_zero(coll, ++salt);
    }
    for (int ti = 0; ti < KF_DTYPE_COUNT && !broken_ && coll != kBarrier; ++ti) {
      const kf_dtype_t t = static_cast<kf_dtype_t>(ti);
      if (f.dtype >= 0 && f.dtype != ti) continue;
      const uint64_t big = (1u << 20) / kft::element_size(t) + 3;
      const uint64_t sizes[4] = {0, 1, 37, big};
      for (int oi = 0; oi < (reduces(coll) ? KF_OP_COUNT : 1) && !broken_; ++oi) {
        const kf_op_t op = static_cast<kf_op_t>(oi);
        if (reduces(coll) && f.op >= 0 && f.op != oi) continue;
        for (int si = 0; si < (f.big ? 4 : 3) && !broken_; ++si) {
          std::vector<int> roots{0};
          if (rooted(coll)) {
            if (si < 3) {
              for (int root = 1; root < n_; ++root) roots.push_back(root);
            } else if (n_ > 1) {
              roots.push_back(n_ - 1);
            }
          }
          for (int root : roots) {
            for (int inplace = 0; inplace < (coll == kSendRecv ? 1 : 2) && !broken_; ++inplace) {
              run_case(Case{coll, t, op, sizes[si], root, inplace != 0, ++salt});
            }
          }
        }
      }
    }
    if (f.verbose || failed_ > failed_before)
      std::printf("rank %d/%d: %-14s %ld passed, %ld failed\n", rank_, n_, kCollNames[ci],
                  passed_ - passed_before, failed_ - failed_before);
  }
}

bool parse_filter(int argc, char** argv, Filter* f) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--no-big") {
      f->big = false;
    } else if (a == "--np" && v) {
      f->expect_np = std::atoi(v);
      if (f->expect_np < 1) return false;
      ++i;
    } else if (a == "--verbose") {
      f->verbose = true;
    } else if (a == "--coll" && v) {
      // A comma-separated list of collective names.
      f->colls = 0;
      std::string list = v;
      for (size_t start = 0; start <= list.size();) {
        size_t end = list.find(',', start);
        if (end == std::string::npos) end = list.size();
        const std::string name = list.substr(start, end - start);
        int found = -1;
        for (int c = 0; c < kCollCount; ++c)
          if (name == kCollNames[c]) found = c;
        if (found < 0) return false;
        f->colls |= 1u << found;
        start = end + 1;
      }
      ++i;
    } else if (a == "--dtype" && v) {
      kf_dtype_t t;
      if (!kft::parse_dtype(v, &t)) return false;
      f->dtype = t;
      ++i;
    } else if (a == "--op" && v) {
      kf_op_t op;
      if (!kft::parse_op(v, &op)) return false;
      f->op = op;
      ++i;
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Filter f;
  if (!parse_filter(argc, argv, &f)) {
    std::fprintf(stderr,
                 "usage: %s [--coll NAME[,NAME...]] [--dtype NAME] [--op NAME] [--no-big] "
                 "[--verbose] [--np N]\n",
                 argv[0]);
    return 2;
  }
  setvbuf(stdout, nullptr, _IOLBF, 0);
  int rank = 0, n = 1;
  kf_comm_t comm = kfmp::init_or_die("conformance", &rank, &n);
  if (f.expect_np && n != f.expect_np) {
    // Guards against a launcher environment that is not recognised, where
    // every process would silently run alone as rank 0 of 1.
    std::printf("FAIL rank %d: communicator has %d ranks, expected %d\n", rank, n, f.expect_np);
    kf_comm_destroy(comm);
    return 1;
  }
  const char* algo = std::getenv("KF_ALGO");
  Runner runner(comm, rank, n);
  runner.run(f);
  std::printf("rank %d/%d (KF_ALGO=%s): %ld passed, %ld failed%s\n", rank, n, algo ? algo : "auto",
              runner.passed(), runner.failed(), runner.broken() ? " (communicator broken)" : "");

  long local[2] = {runner.passed(), runner.failed()}, total[2] = {0, 0};
  bool any_failed = runner.failed() > 0;
  if (!runner.broken()) {
    const kf_status_t st = kf_all_reduce(comm, local, total, 2, KF_INT64, KF_SUM);
    if (st != KF_SUCCESS) {
      std::printf("FAIL rank %d: summing results: %s: %s\n", rank, kf_status_string(st),
                  kf_comm_last_error(comm));
      any_failed = true;
    } else {
      any_failed = any_failed || total[1] > 0;
      if (rank == 0) std::printf("%ld passed, %ld failed\n", total[0], total[1]);
    }
  } else {
    std::printf("%ld passed, %ld failed\n", local[0], local[1]);
  }
  const kf_status_t st = kf_comm_destroy(comm);
  if (st != KF_SUCCESS) {
    std::printf("FAIL rank %d: kf_comm_destroy: %s\n", rank, kf_status_string(st));
    any_failed = true;
  }
  return any_failed ? 1 : 0;
}
