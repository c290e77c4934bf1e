// Thin RAII and helpers over BSD sockets (IPv4 and IPv6): listening,
// connecting with retries, reading and writing whole buffers before a
// deadline, and choosing the address to advertise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/deadline.h"
#include "base/status.h"

namespace kf {

// Owns a file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) reset(o.release());
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// Splits "host:port" or "[v6]:port". Fails with KF_ERR_INVALID_ARGUMENT.
Status split_host_port(const std::string& addr, std::string* host, uint16_t* port);

// Listens on host:port (port 0 = any). Returns the bound port.
Status listen_tcp(const std::string& host, uint16_t port, Fd* out, uint16_t* bound_port);

// Connects to host:port, retrying refused connections until the deadline
// (the listener may not be up yet).
Status connect_tcp(const std::string& host, uint16_t port, const Deadline& deadline, Fd* out);

// Accepts one connection, waiting at most until the deadline or until
// `wake_fd` becomes readable (then returns KF_ERR_ABORTED). wake_fd may be -1.
Status accept_tcp(int listen_fd, int wake_fd, const Deadline& deadline, Fd* out,
                  std::string* peer_text);

// Blocking-style whole-buffer I/O on a socket of either mode, bounded by a deadline.
Status write_full(int fd, const void* buf, size_t len, const Deadline& deadline);
Status read_full(int fd, void* buf, size_t len, const Deadline& deadline);

Status set_nonblocking(int fd, bool on);
// TCP_NODELAY, SO_SNDBUF/SO_RCVBUF when buffer_bytes > 0, and the
// congestion control `congestion` when not empty (an error if the kernel
// refuses it: unknown, or not allowed to this process).
Status tune_data_socket(int fd, int buffer_bytes, const std::string& congestion);
// Whether this process may use the congestion control `congestion` (empty:
// yes), tried on a fresh socket: the same error as tune_data_socket would
// give, before any connection is made.
Status check_congestion(const std::string& congestion);

// The local IP address of a connected socket: the address that routes to its peer.
std::string local_ip_of(int fd);

// The address to listen on when no connection tells us: KF_IFNAME, then
// KF_SUBNET, else the first up non-loopback IPv4 interface, else 127.0.0.1.
Status choose_listen_ip(std::string* ip);

// "host:port", bracketing IPv6 hosts.
std::string join_host_port(const std::string& host, uint16_t port);

}  // namespace kf
