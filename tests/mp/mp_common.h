// Helpers shared by the multi-process tests: communicator set-up with a clear
// error, guarded buffers and status formatting. Public API only.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kungfu/kungfu.h"

namespace kfmp {

// A byte buffer with guard zones on both sides, so a collective that writes
// past its documented region is caught.
class Buf {
 public:
  static constexpr size_t kGuard = 64;
  static constexpr unsigned char kGuardByte = 0xA5;
  static constexpr unsigned char kFillByte = 0x77;  // "not written yet"

  explicit Buf(size_t bytes) : v_(bytes + 2 * kGuard, kFillByte), n_(bytes) {
    std::memset(v_.data(), kGuardByte, kGuard);
    std::memset(v_.data() + kGuard + n_, kGuardByte, kGuard);
  }
  unsigned char* data() { return v_.data() + kGuard; }
  const unsigned char* data() const { return v_.data() + kGuard; }
  size_t size() const { return n_; }
  bool guards_ok() const {
    for (size_t i = 0; i < kGuard; ++i)
      if (v_[i] != kGuardByte || v_[kGuard + n_ + i] != kGuardByte) return false;
    return true;
  }

 private:
  std::vector<unsigned char> v_;
  size_t n_;
};

// Initialises from the launcher's environment or exits with a message.
inline kf_comm_t init_or_die(const char* prog, int* rank, int* size) {
  kf_comm_t comm = nullptr;
  const kf_status_t st = kf_comm_init_from_env(nullptr, &comm);
  if (st != KF_SUCCESS) {
    std::fprintf(stderr, "%s: kf_comm_init_from_env failed: %s: %s\n", prog, kf_status_string(st),
                 kf_comm_last_error(nullptr));
    std::exit(1);
  }
  kf_comm_rank(comm, rank);
  kf_comm_size(comm, size);
  return comm;
}

}  // namespace kfmp
