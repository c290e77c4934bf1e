// The perf engine (after nccl-tests' testEngine): argument parsing, timing,
// data set-up and checking, and the result table. Each collective is one small
// file that fills a CollDesc and calls run_perf() from main().
#pragma once

#include <cstddef>
#include <cstdint>

#include "kungfu/kungfu.h"

namespace kfp {

// Element counts of one run, chosen by the collective from a byte size.
struct Counts {
  uint64_t send = 0;   // elements in sendbuf
  uint64_t recv = 0;   // elements in recvbuf
  uint64_t param = 0;  // the count argument of the call (the "count" column)
  // In-place layout: one buffer of max(send, recv) elements. If
  // inplace_send_in_recv, sendbuf = recvbuf + inplace_offset elements
  // (all_gather), else recvbuf = sendbuf + inplace_offset (reduce_scatter).
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
};

struct CollDesc {
  const char* name;  // e.g. "all_reduce"; the binary is <name>_perf
  bool uses_op;      // prints the op in the redop column, else "none"
  bool uses_root;    // prints the root in the root column, else -1
  // Counts for a requested size in bytes (rounded down to what the
  // collective can split evenly).
  Counts (*get_counts)(size_t bytes, size_t esize, int nranks);
  // Fills this rank's input into send (send.count elements).
  void (*init_input)(const RunParams& p, void* send);
  // Fills what recvbuf must hold afterwards (recv.count elements). Returns
  // false when this rank's recvbuf is not checked (e.g. not the root).
  bool (*fill_expected)(const RunParams& p, void* expected);
  kf_status_t (*run)(const RunParams& p, const void* send, void* recv);
  // Bus bandwidth factor: busbw = algbw * factor (nccl-tests PERFORMANCE.md).
  double (*bus_factor)(int nranks);
};

// Parses argv, runs the size sweep and prints the table on rank 0.
// Returns the process exit code (0 = every check passed, no error).
int run_perf(const CollDesc& coll, int argc, char** argv);

}  // namespace kfp
