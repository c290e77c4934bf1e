// Doorbell: a futex word in shared memory on which one rank's waiting
// threads sleep, and which peers (or local threads) ring after giving them
// work. Waiters spin briefly before sleeping, so a busy exchange never
// enters the kernel, and an idle rank uses no CPU.
#pragma once

#include <atomic>
#include <cstdint>

namespace kf {

struct alignas(64) Doorbell {
  std::atomic<uint32_t> seq{0};
  std::atomic<uint32_t> sleepers{0};

  // Wakes the waiters, if any sleep; costs no system call when none does.
  // Call after publishing the work. Callable from any process mapping it.
  void ring();
  // Announce-then-sleep protocol: call prepare(), re-check for work, then
  // sleep(token, ms) if there is none; always finish with done().
  uint32_t prepare() {
    sleepers.fetch_add(1);
    return seq.load();
  }
  // Sleeps until rung (after prepare returned `token`) or `timeout_ms` passes.
  void sleep(uint32_t token, int timeout_ms);
  void done() { sleepers.fetch_sub(1); }
};

static_assert(std::atomic<uint32_t>::is_always_lock_free, "futex words must be lock free");

}  // namespace kf
