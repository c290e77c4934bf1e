#include "kfrun/output.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

namespace kfrun {

void Sink::write_all(const std::string& data) {
  size_t done = 0;
  while (!broken_ && done < data.size()) {
    ssize_t n = ::write(fd_, data.data() + done, data.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      // kfrun's stdout may have been left non-blocking by whoever shares it.
      pollfd p{fd_, POLLOUT, 0};
      ::poll(&p, 1, -1);
    } else {
      broken_ = true;
    }
  }
}

void LineForwarder::feed(const char* data, size_t n) {
  std::string out;
  size_t start = 0;
  for (size_t i = 0; i < n; ++i) {
    if (data[i] != '\n') continue;
    out += prefix_;
    out += pending_;
    pending_.clear();
    out.append(data + start, i + 1 - start);
    start = i + 1;
  }
  pending_.append(data + start, n - start);
  // One write per read keeps system calls few; it holds whole lines only.
  if (!out.empty()) sink_->write_all(out);
  if (pending_.size() >= kMaxPending) emit_partial();
}

void LineForwarder::finish() {
  if (!pending_.empty()) emit_partial();
}

void LineForwarder::emit_partial() {
  std::string out = prefix_ + pending_;
  if (!prefix_.empty()) out.push_back('\n');
  pending_.clear();
  sink_->write_all(out);
}

}  // namespace kfrun
