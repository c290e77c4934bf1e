#include "transport/socket.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "base/config.h"

namespace kf {

void Fd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

Status split_host_port(const std::string& addr, std::string* host, uint16_t* port) {
  std::string h, p;
  if (!addr.empty() && addr[0] == '[') {
    size_t close = addr.find(']');
    if (close == std::string::npos || close + 1 >= addr.size() || addr[close + 1] != ':') {
      return invalid_argument("bad address \"" + addr + "\" (expected [v6]:port)");
    }
    h = addr.substr(1, close - 1);
    p = addr.substr(close + 2);
  } else {
    size_t colon = addr.rfind(':');
    if (colon == std::string::npos) {
      return invalid_argument("bad address \"" + addr + "\" (expected host:port)");
    }
    h = addr.substr(0, colon);
    p = addr.substr(colon + 1);
  }
  char* end = nullptr;
  long v = std::strtol(p.c_str(), &end, 10);
  if (h.empty() || p.empty() || *end != '\0' || v < 0 || v > 65535) {
    return invalid_argument("bad address \"" + addr + "\" (expected host:port)");
  }
  *host = h;
  *port = static_cast<uint16_t>(v);
  return Status::ok();
}

std::string join_host_port(const std::string& host, uint16_t port) {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

namespace {

Status resolve(const std::string& host, uint16_t port, bool passive, addrinfo** out) {
  addrinfo hints;
  std::memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  std::string service = std::to_string(port);
  int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, out);
  if (rc != 0) {
    return system_error("cannot resolve \"" + host + "\": " + gai_strerror(rc));
  }
  return Status::ok();
}

Status wait_fd(int fd, short events, const Deadline& deadline, const char* what) {
  for (;;) {
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, deadline.remaining_ms(1000));
    if (rc > 0) return Status::ok();
    if (rc < 0 && errno != EINTR) return system_error(errno_text("poll", errno));
    if (deadline.expired()) return timeout_error(std::string("timed out while ") + what);
  }
}

}  // namespace

Status listen_tcp(const std::string& host, uint16_t port, Fd* out, uint16_t* bound_port) {
  addrinfo* ai = nullptr;
  KF_RETURN_IF_ERROR(resolve(host, port, true, &ai));
  Status st = system_error("no usable address for " + host);
  for (addrinfo* a = ai; a != nullptr; a = a->ai_next) {
    Fd fd(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!fd.valid()) {
      st = system_error(errno_text("socket", errno));
      continue;
    }
    int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd.get(), a->ai_addr, a->ai_addrlen) != 0) {
      st = system_error(errno_text(("bind " + join_host_port(host, port)).c_str(), errno));
      continue;
    }
    if (::listen(fd.get(), 1024) != 0) {
      st = system_error(errno_text("listen", errno));
      continue;
    }
    sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&ss), &len);
    *bound_port = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                                : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
    *out = std::move(fd);
    st = Status::ok();
    break;
  }
  freeaddrinfo(ai);
  return st;
}

Status connect_tcp(const std::string& host, uint16_t port, const Deadline& deadline, Fd* out) {
  addrinfo* ai = nullptr;
  KF_RETURN_IF_ERROR(resolve(host, port, false, &ai));
  std::string last = "no address";
  int backoff_ms = 5;
  for (;;) {
    for (addrinfo* a = ai; a != nullptr; a = a->ai_next) {
      Fd fd(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol));
      if (!fd.valid()) {
        last = errno_text("socket", errno);
        continue;
      }
      int rc = ::connect(fd.get(), a->ai_addr, a->ai_addrlen);
      if (rc != 0 && errno == EINPROGRESS) {
        Status w = wait_fd(fd.get(), POLLOUT, deadline, "connecting");
        if (!w.is_ok()) {
          last = w.message();
          continue;
        }
        int err = 0;
        socklen_t len = sizeof(err);
        ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
        rc = err == 0 ? 0 : -1;
        errno = err;
      }
      if (rc == 0) {
        set_nonblocking(fd.get(), false);
        *out = std::move(fd);
        freeaddrinfo(ai);
        return Status::ok();
      }
      last = errno_text("connect", errno);
    }
    if (deadline.expired()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min(backoff_ms, deadline.remaining_ms())));
    backoff_ms = std::min(backoff_ms * 2, 200);
  }
  freeaddrinfo(ai);
  return timeout_error("cannot connect to " + join_host_port(host, port) + " (" + last + ")");
}

Status accept_tcp(int listen_fd, int wake_fd, const Deadline& deadline, Fd* out,
                  std::string* peer_text) {
  for (;;) {
    pollfd p[2] = {{listen_fd, POLLIN, 0}, {wake_fd, POLLIN, 0}};
    int rc = ::poll(p, wake_fd >= 0 ? 2 : 1, deadline.remaining_ms(1000));
    if (rc < 0 && errno != EINTR) return system_error(errno_text("poll", errno));
    if (wake_fd >= 0 && rc > 0 && (p[1].revents & POLLIN)) return aborted_error("accept stopped");
    if (rc > 0 && (p[0].revents & POLLIN)) {
      sockaddr_storage ss;
      socklen_t len = sizeof(ss);
      int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == EAGAIN || errno == ECONNABORTED) continue;
        return system_error(errno_text("accept", errno));
      }
      char host[NI_MAXHOST] = "?", serv[NI_MAXSERV] = "?";
      getnameinfo(reinterpret_cast<sockaddr*>(&ss), len, host, sizeof(host), serv, sizeof(serv),
                  NI_NUMERICHOST | NI_NUMERICSERV);
      if (peer_text != nullptr) *peer_text = std::string(host) + ":" + serv;
      out->reset(fd);
      return Status::ok();
    }
    if (deadline.expired()) return timeout_error("timed out waiting for connections");
  }
}

Status write_full(int fd, const void* buf, size_t len, const Deadline& deadline) {
  const char* p = static_cast<const char*>(buf);
  while (len > 0) {
    ssize_t n = ::send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      KF_RETURN_IF_ERROR(wait_fd(fd, POLLOUT, deadline, "sending"));
      continue;
    }
    return remote_error(errno_text("send", errno));
  }
  return Status::ok();
}

Status read_full(int fd, void* buf, size_t len, const Deadline& deadline) {
  char* p = static_cast<char*>(buf);
  while (len > 0) {
    ssize_t n = ::recv(fd, p, len, MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= static_cast<size_t>(n);
      continue;
    }
    if (n == 0) return remote_error("connection closed by peer");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      KF_RETURN_IF_ERROR(wait_fd(fd, POLLIN, deadline, "receiving"));
      continue;
    }
    return remote_error(errno_text("recv", errno));
  }
  return Status::ok();
}

Status set_nonblocking(int fd, bool on) {
  int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags < 0) return system_error(errno_text("fcntl", errno));
  flags = on ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK);
  if (::fcntl(fd, F_SETFL, flags) < 0) return system_error(errno_text("fcntl", errno));
  return Status::ok();
}

namespace {

Status set_congestion(int fd, const std::string& congestion) {
  if (congestion.empty()) return Status::ok();
  if (::setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, congestion.data(),
                   static_cast<socklen_t>(congestion.size())) != 0) {
    const int err = errno;
    return invalid_argument(
        "KF_TCP_CONGESTION=" + congestion + ": " + errno_text("setsockopt TCP_CONGESTION", err) +
        (err == EPERM    ? " (this process may only choose one of "
                           "/proc/sys/net/ipv4/tcp_allowed_congestion_control)"
         : err == ENOENT ? " (not one of /proc/sys/net/ipv4/tcp_available_congestion_control)"
                         : ""));
  }
  return Status::ok();
}

}  // namespace

Status tune_data_socket(int fd, int buffer_bytes, const std::string& congestion) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (buffer_bytes > 0) {
    ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buffer_bytes, sizeof(buffer_bytes));
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer_bytes, sizeof(buffer_bytes));
  }
  return set_congestion(fd, congestion);
}

Status check_congestion(const std::string& congestion) {
  if (congestion.empty()) return Status::ok();
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return system_error(errno_text("socket", errno));
  return set_congestion(fd.get(), congestion);
}

std::string local_ip_of(int fd) {
  sockaddr_storage ss;
  socklen_t len = sizeof(ss);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "127.0.0.1";
  char host[NI_MAXHOST];
  if (getnameinfo(reinterpret_cast<sockaddr*>(&ss), len, host, sizeof(host), nullptr, 0,
                  NI_NUMERICHOST) != 0) {
    return "127.0.0.1";
  }
  return host;
}

namespace {

bool in_subnet(const sockaddr_in* a, const std::string& subnet) {
  size_t slash = subnet.find('/');
  std::string net = subnet.substr(0, slash);
  int bits = slash == std::string::npos ? 32 : std::atoi(subnet.c_str() + slash + 1);
  in_addr n;
  if (inet_pton(AF_INET, net.c_str(), &n) != 1 || bits < 0 || bits > 32) return false;
  uint32_t mask = bits == 0 ? 0 : htonl(~uint32_t(0) << (32 - bits));
  return (a->sin_addr.s_addr & mask) == (n.s_addr & mask);
}

}  // namespace

Status choose_listen_ip(std::string* ip) {
  std::string ifname = knob_string(Knob::KF_IFNAME);
  std::string subnet = knob_string(Knob::KF_SUBNET);
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return system_error(errno_text("getifaddrs", errno));
  std::string found;
  for (ifaddrs* i = list; i != nullptr && found.empty(); i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
    if (!(i->ifa_flags & IFF_UP)) continue;
    auto* sin = reinterpret_cast<sockaddr_in*>(i->ifa_addr);
    bool pick;
    if (!ifname.empty()) {
      pick = ifname == i->ifa_name;
    } else if (!subnet.empty()) {
      pick = in_subnet(sin, subnet);
    } else {
      pick = !(i->ifa_flags & IFF_LOOPBACK);
    }
    if (pick) {
      char buf[INET_ADDRSTRLEN];
      inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof(buf));
      found = buf;
    }
  }
  freeifaddrs(list);
  if (found.empty()) {
    if (!ifname.empty()) return invalid_argument("KF_IFNAME=" + ifname + ": no such up IPv4 interface");
    if (!subnet.empty()) return invalid_argument("KF_SUBNET=" + subnet + ": no interface in that subnet");
    found = "127.0.0.1";
  }
  *ip = found;
  return Status::ok();
}

}  // namespace kf
