#include "transport/transfer.h"

#include "transport/shm/doorbell.h"

namespace kf {

bool Transfer::complete(const Status& st) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_) return false;
    done_ = true;
    status_ = st;
  }
  cv_.notify_all();
  if (bell_ != nullptr) bell_->ring();
  return true;
}

bool Transfer::done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

Status Transfer::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

Status Transfer::wait(const Deadline& deadline) {
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
