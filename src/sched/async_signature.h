// The signature frame of an asynchronous operation: what every rank sends
// every peer when it submits the operation, so that each rank can compare
// the full signatures (and say exactly what differs) and name operations
// that some ranks never submitted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kf {

struct SigRecord {
  uint32_t kind = 0;
  uint64_t count = 0;
  int32_t dtype = -1;
  int32_t op = -1;
  int32_t root = -1;
  uint64_t partition_elems = 0;
  int32_t strategy = -1;  // a kf::Strategy, or -1 for the flat algorithms
  bool fused = false;     // runs fused (sched/fusion.h)
  std::string name;  // at most 255 bytes travel
};

constexpr size_t kSigRecordBytes = 48 + 256;

// Fixed-size little-endian encoding (the frame length is the same for all).
void encode_sig(const SigRecord& s, char out[kSigRecordBytes]);
SigRecord decode_sig(const char in[kSigRecordBytes]);

// "" when equal, else e.g. "count 100 on rank 0 vs 99 on rank 2".
std::string sig_difference(const SigRecord& mine, int my_rank, const SigRecord& theirs,
                           int their_rank);

}  // namespace kf
