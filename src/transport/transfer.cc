#include "transport/transfer.h"

#include <chrono>

#include "base/cpu_relax.h"
#include "transport/shm/doorbell.h"

namespace kf {

bool Transfer::complete(const Status& st) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_) return false;
    done_ = true;
    status_ = st;
    done_flag_.store(true, std::memory_order_release);
  }
  cv_.notify_all();
  if (bell_ != nullptr) bell_->ring();
  if (listener_) listener_();
  return true;
}

bool Transfer::done() const {
  return done_flag_.load(std::memory_order_acquire);
}

Status Transfer::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

Status Transfer::wait(const Deadline& deadline) {
  if (spin_us_ > 0 && !done()) {
    // Bounded: after spin_us_ the waiter sleeps like any other.
    const auto until = Clock::now() + std::chrono::microseconds(spin_us_);
    for (unsigned polls = 1; !done(); ++polls) {
      cpu_relax();
      if ((polls & 63) == 0 && Clock::now() >= until) break;
    }
  }
  if (driver_ != nullptr && !done()) return driver_->drive(*this, deadline);
  return sleep_until_done(deadline);
}

Status Transfer::sleep_until_done(const Deadline& deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  if (deadline.is_never()) {
    cv_.wait(lock, [&] { return done_; });
  } else if (!cv_.wait_until(lock, deadline.time_point(), [&] { return done_; })) {
    return timeout_error("timed out");
  }
  return status_;
}

void Transfer::cancel(const Status& why) {
  {
    std::lock_guard<std::mutex> lock(io_mu_);
    cancelled_ = true;
  }
  complete(why);
}

}  // namespace kf
