#include "transport/shm/doorbell.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <climits>

namespace kf {
namespace {

long futex(std::atomic<uint32_t>* word, int op, uint32_t val, const timespec* timeout) {
  // Not FUTEX_PRIVATE_FLAG: the word lives in memory shared between processes.
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, val, timeout, nullptr, 0);
}

}  // namespace

void Doorbell::ring() {
  // The fence orders the caller's publication of work before the check of
  // `sleepers`; a waiter increments `sleepers` before re-checking for work.
  // So either the waiter sees the work, or we see the waiter and wake it.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (sleepers.load(std::memory_order_relaxed) == 0) return;
  seq.fetch_add(1);
  futex(&seq, FUTEX_WAKE, INT_MAX, nullptr);
}

void Doorbell::sleep(uint32_t token, int timeout_ms) {
  timespec ts;
  ts.tv_sec = timeout_ms / 1000;
  ts.tv_nsec = static_cast<long>(timeout_ms % 1000) * 1000000L;
  futex(&seq, FUTEX_WAIT, token, &ts);
}

}  // namespace kf
