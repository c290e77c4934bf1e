#include "base/wake_timer.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <system_error>

namespace kf {
namespace {

// Reads and discards what a non-blocking descriptor holds (an eventfd's
// count, a timerfd's expirations).
void drain(int fd) {
  uint64_t v;
  while (::read(fd, &v, sizeof(v)) < 0 && errno == EINTR) {
  }
}

void settime(int fd, const timespec& at) {
  itimerspec spec{};
  spec.it_value = at;  // zero: disarmed
  // (Cannot fail for a valid timerfd and a normalised time.)
  ::timerfd_settime(fd, TFD_TIMER_ABSTIME, &spec, nullptr);
}

}  // namespace

WakeTimer::WakeTimer() {
  event_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (event_fd_ < 0) throw std::system_error(errno, std::generic_category(), "eventfd");
  // steady_clock is CLOCK_MONOTONIC on Linux: the times set are on its scale.
  timer_fd_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
  if (timer_fd_ < 0) {
    const int err = errno;
    ::close(event_fd_);
    throw std::system_error(err, std::generic_category(), "timerfd_create");
  }
}

WakeTimer::~WakeTimer() {
  ::close(timer_fd_);
  ::close(event_fd_);
}

void WakeTimer::ring() {
  const uint64_t one = 1;
  while (::write(event_fd_, &one, sizeof(one)) < 0 && errno == EINTR) {
  }
}

void WakeTimer::set(Clock::time_point at) {
  const int64_t ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(at.time_since_epoch()).count();
  timespec ts;
  ts.tv_sec = static_cast<time_t>(ns / 1000000000);
  ts.tv_nsec = static_cast<long>(ns % 1000000000);
  if (ts.tv_sec == 0 && ts.tv_nsec == 0) ts.tv_nsec = 1;  // (zero would disarm)
  settime(timer_fd_, ts);
}

void WakeTimer::clear() {
  settime(timer_fd_, timespec{});
}

void WakeTimer::sleep() {
  pollfd fds[2] = {{event_fd_, POLLIN, 0}, {timer_fd_, POLLIN, 0}};
  if (::poll(fds, 2, -1) <= 0) {
    // EINTR: a spurious return. Anything else (the kernel out of memory):
    // a pause, so that a caller looping on its state does not spin.
    if (errno != EINTR) ::usleep(1000);
    return;
  }
  if (fds[0].revents != 0) drain(event_fd_);
  if (fds[1].revents != 0) drain(timer_fd_);
}

}  // namespace kf
