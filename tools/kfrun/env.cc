#include "kfrun/env.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

namespace kfrun {
namespace {

// The knob names, taken from the library's knob table so that a rename there
// breaks this build instead of silently breaking the launcher contract.
namespace knob {
#define KF_KNOB(name, def, doc) constexpr const char name[] = #name;
#include "base/knobs.def"
#undef KF_KNOB
}  // namespace knob

constexpr const char* kLauncherVars[] = {knob::KF_RANK,       knob::KF_SIZE,
                                         knob::KF_LOCAL_RANK, knob::KF_LOCAL_SIZE,
                                         knob::KF_ROOT_ADDR,  knob::KF_JOB_SECRET};

std::string sys_error(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

}  // namespace

int find_free_port(std::string* error) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = sys_error("socket");
    return 0;
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    *error = sys_error("bind 127.0.0.1:0");
  } else if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    *error = sys_error("getsockname");
  } else {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

std::string make_job_secret(std::string* error) {
  unsigned char bytes[16];
  int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = sys_error("open /dev/urandom");
    return "";
  }
  size_t got = 0;
  while (got < sizeof(bytes)) {
    ssize_t n = ::read(fd, bytes + got, sizeof(bytes) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *error = n < 0 ? sys_error("read /dev/urandom") : "read /dev/urandom: unexpected end of file";
      ::close(fd);
      return "";
    }
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * sizeof(bytes));
  for (unsigned char b : bytes) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 0xf]);
  }
  return out;
}

bool is_launcher_variable(const std::string& name) {
  for (const char* v : kLauncherVars) {
    if (name == v) return true;
  }
  return false;
}

std::vector<std::string> build_rank_env(const char* const* base,
                                        const std::vector<std::pair<std::string, std::string>>& exports,
                                        const JobInfo& job, int rank) {
  // Ordered by name so every rank sees the same, deterministic environment.
  std::map<std::string, std::string> vars;
  for (const char* const* p = base; p != nullptr && *p != nullptr; ++p) {
    const char* eq = std::strchr(*p, '=');
    if (eq == nullptr) continue;  // malformed entry: not passed on
    vars[std::string(*p, eq)] = eq + 1;
  }
  for (const auto& [name, value] : exports) vars[name] = value;

  // Every rank is on this host, so local rank and size equal rank and size.
  vars[knob::KF_RANK] = std::to_string(rank);
  vars[knob::KF_SIZE] = std::to_string(job.size);
  vars[knob::KF_LOCAL_RANK] = std::to_string(rank);
  vars[knob::KF_LOCAL_SIZE] = std::to_string(job.size);
  vars[knob::KF_ROOT_ADDR] = job.root_addr;
  vars[knob::KF_JOB_SECRET] = job.job_secret;

  std::vector<std::string> out;
  out.reserve(vars.size());
  for (const auto& [name, value] : vars) out.push_back(name + "=" + value);
  return out;
}

}  // namespace kfrun
