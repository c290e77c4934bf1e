// A POSIX shared-memory segment, created by one rank and mapped by its peers
// on the same host. The creator unlinks the name as soon as every peer has
// mapped it, so no name outlives the job's start-up, even if ranks crash.
#pragma once

#include <cstddef>
#include <string>

#include "base/status.h"

namespace kf {

class ShmSegment {
 public:
  ShmSegment() = default;
  ~ShmSegment();
  ShmSegment(ShmSegment&& o) noexcept;
  ShmSegment& operator=(ShmSegment&& o) noexcept;
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  // Creates (replacing a stale one of the same name) and maps `bytes`, zeroed.
  static Status create(const std::string& name, size_t bytes, ShmSegment* out);
  // Maps an existing segment.
  static Status open(const std::string& name, size_t bytes, ShmSegment* out);

  // Removes the name; the mapping stays valid. Idempotent.
  void unlink();

  char* data() const { return static_cast<char*>(addr_); }
  size_t size() const { return bytes_; }

 private:
  void release();

  void* addr_ = nullptr;
  size_t bytes_ = 0;
  std::string name_;
  bool owner_ = false;
};

}  // namespace kf
