// The perf engine (after nccl-tests' testEngine): argument parsing, timing,
// data set-up and checking, the result table, the JSON report and the
// minimum-bandwidth gate. Each collective is one small file that fills a
// CollDesc and calls run_perf() from main().
#pragma once

#include <cstddef>
#include <cstdint>

#include "kungfu/kungfu.h"

namespace kfp {

// Element counts of one run, chosen by the collective from a byte size (the
// nccl-tests GetCollByteCount rules).
struct Counts {
  uint64_t send = 0;   // elements in sendbuf
  uint64_t recv = 0;   // elements in recvbuf
  uint64_t param = 0;  // the count argument of the call (the "count" column)
  // In-place layout: one buffer of max(send, recv) elements. If
  // inplace_send_in_recv, sendbuf = recvbuf + inplace_offset elements
  // (all_gather, gather), else recvbuf = sendbuf + inplace_offset
  // (reduce_scatter, scatter). Offset 0 means sendbuf == recvbuf.
  bool inplace_send_in_recv = true;
  uint64_t inplace_offset = 0;
};

struct RunParams {
  kf_comm_t comm;
  int rank;
  int nranks;
  kf_dtype_t dtype;
  kf_op_t op;
  int root;
  Counts counts;
  uint32_t salt;  // varies the data between checked runs
  bool inplace;   // this run uses the in-place layout
};

struct CollDesc {
  const char* name = nullptr;  // e.g. "all_reduce"; the binary is <name>_perf
  bool uses_op = false;        // prints the op in the redop column, else "none"
  bool uses_root = false;      // prints the root in the root column, else -1
  // False when the in-place variant has no defined result to check (sendrecv,
  // as in nccl-tests): its #wrong column shows N/A.
  bool check_inplace = true;
  // Counts for a requested size in bytes on `rank` (rounded down to what the
  // collective can split evenly).
  Counts (*get_counts)(size_t bytes, size_t esize, int nranks, int rank) = nullptr;
  // Fills this rank's input into send (counts.send elements).
  void (*init_input)(const RunParams& p, void* send) = nullptr;
  // Fills what recvbuf must hold afterwards (counts.recv elements). Returns
  // false when this rank's recvbuf is not checked (e.g. not the root).
  bool (*fill_expected)(const RunParams& p, void* expected) = nullptr;
  kf_status_t (*run)(const RunParams& p, const void* send, void* recv) = nullptr;
  // Bus bandwidth factor: busbw = algbw * factor (nccl-tests PERFORMANCE.md).
  double (*bus_factor)(int nranks) = nullptr;
};

// Parses argv, runs the size sweep, prints the table on rank 0, writes the
// JSON report if asked and applies the KF_PERF_MIN_BW gate. Returns the
// process exit code: 0 = every check passed, 1 = wrong results, a library
// error or average bus bandwidth below the gate, 2 = usage error.
int run_perf(const CollDesc& coll, int argc, char** argv);

}  // namespace kfp
