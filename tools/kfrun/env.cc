#include "kfrun/env.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
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

std::string sys_error(const std::string& what) { return what + ": " + std::strerror(errno); }

bool read_random(unsigned char* bytes, size_t size, std::string* error) {
  int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = sys_error("open /dev/urandom");
    return false;
  }
  size_t got = 0;
  while (got < size) {
    ssize_t n = ::read(fd, bytes + got, size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *error = n < 0 ? sys_error("read /dev/urandom") : "read /dev/urandom: unexpected end of file";
      ::close(fd);
      return false;
    }
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  return true;
}

std::string ip_text(const in_addr& a) {
  char buf[INET_ADDRSTRLEN] = {0};
  ::inet_ntop(AF_INET, &a, buf, sizeof(buf));
  return buf;
}

bool is_loopback(const in_addr& a) { return (ntohl(a.s_addr) >> 24) == 127; }

// The IPv4 addresses `host` stands for: itself when numeric, else what
// getaddrinfo finds (hosts file, then DNS).
std::vector<in_addr> ipv4_addresses(const std::string& host) {
  std::vector<in_addr> out;
  in_addr a{};
  if (::inet_pton(AF_INET, host.c_str(), &a) == 1) {
    out.push_back(a);
    return out;
  }
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0) return out;
  for (addrinfo* p = res; p != nullptr; p = p->ai_next) {
    out.push_back(reinterpret_cast<const sockaddr_in*>(p->ai_addr)->sin_addr);
  }
  ::freeaddrinfo(res);
  return out;
}

bool is_interface_address(const in_addr& a) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return false;
  bool found = false;
  for (ifaddrs* p = list; p != nullptr && !found; p = p->ifa_next) {
    if (p->ifa_addr == nullptr || p->ifa_addr->sa_family != AF_INET) continue;
    found = reinterpret_cast<const sockaddr_in*>(p->ifa_addr)->sin_addr.s_addr == a.s_addr;
  }
  ::freeifaddrs(list);
  return found;
}

// The local address the kernel would use to reach `to`: a UDP socket's
// connect only picks the route, it sends nothing.
bool route_source(const in_addr& to, in_addr* from, std::string* error) {
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = sys_error("socket");
    return false;
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr = to;
  addr.sin_port = htons(9);
  socklen_t len = sizeof(addr);
  bool ok = false;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    *error = sys_error("no route to " + ip_text(to));
  } else if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    *error = sys_error("getsockname");
  } else {
    *from = addr.sin_addr;
    ok = true;
  }
  ::close(fd);
  return ok;
}

}  // namespace

std::vector<RankPlace> place_ranks(const std::vector<HostSlots>& hosts, const std::vector<bool>& local,
                                   int np) {
  std::vector<RankPlace> places(static_cast<size_t>(np));
  for (int r = 0; r < np; ++r) places[static_cast<size_t>(r)].rank = r;
  if (hosts.empty()) {
    for (RankPlace& p : places) {
      p.local_rank = p.rank;
      p.local_size = np;
    }
    return places;
  }
  // Group key per host: every local host is the same machine.
  std::map<std::string, std::vector<int>> groups;
  size_t h = 0;
  int used = 0;
  for (RankPlace& p : places) {
    while (h < hosts.size() && used >= hosts[h].slots) {
      ++h;
      used = 0;
    }
    if (h == hosts.size()) break;  // more ranks than slots: the caller's error
    ++used;
    p.host = hosts[h].host;
    p.remote = !local[h];
    std::string key = p.remote ? "remote:" + p.host : std::string("local");
    std::vector<int>& members = groups[key];
    p.local_rank = static_cast<int>(members.size());
    members.push_back(p.rank);
  }
  for (const auto& [key, members] : groups) {
    for (int r : members) places[static_cast<size_t>(r)].local_size = static_cast<int>(members.size());
  }
  return places;
}

bool is_local_host(const std::string& host) {
  if (host == "localhost" || host == "localhost.localdomain" || host == "ip6-localhost") return true;
  char name[256] = {0};
  if (::gethostname(name, sizeof(name) - 1) == 0 && name[0] != '\0') {
    std::string full = name;
    if (host == full || host == full.substr(0, full.find('.'))) return true;
  }
  for (const in_addr& a : ipv4_addresses(host)) {
    if (is_loopback(a) || is_interface_address(a)) return true;
  }
  return false;
}

std::string choose_root_addr(const std::vector<RankPlace>& places, std::string* error) {
  const RankPlace* first_remote = nullptr;
  for (const RankPlace& p : places) {
    if (p.remote) {
      first_remote = &p;
      break;
    }
  }
  if (first_remote == nullptr) {
    int port = find_free_port("127.0.0.1", error);
    return port == 0 ? "" : "127.0.0.1:" + std::to_string(port);
  }
  const RankPlace& root = places.front();
  if (!root.remote) {
    // Rank 0 is here: listen on the address the remote ranks reach us by.
    std::vector<in_addr> to = ipv4_addresses(first_remote->host);
    if (to.empty()) {
      *error = "cannot resolve " + first_remote->host + " to an IPv4 address";
      return "";
    }
    in_addr from{};
    if (!route_source(to.front(), &from, error)) return "";
    if (is_loopback(from)) {
      *error = first_remote->host + " is reached over loopback, yet is not this host";
      return "";
    }
    std::string ip = ip_text(from);
    int port = find_free_port(ip, error);
    return port == 0 ? "" : ip + ":" + std::to_string(port);
  }
  std::vector<in_addr> addrs = ipv4_addresses(root.host);
  // A name only the remote-exec command knows (an ssh config alias, say) is
  // passed on as is: rank 0's library resolves it there.
  std::string root_host = addrs.empty() ? root.host : ip_text(addrs.front());
  // The port cannot be probed on another host. Below Linux's default
  // ephemeral range (32768..60999), so no outgoing connection there holds it.
  unsigned char r[2];
  if (!read_random(r, sizeof(r), error)) return "";
  int port = 20000 + ((r[0] << 8) | r[1]) % 12768;
  return root_host + ":" + std::to_string(port);
}

int find_free_port(const std::string& ip, std::string* error) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = sys_error("socket");
    return 0;
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  if (::inet_pton(AF_INET, ip.c_str(), &addr.sin_addr) != 1) {
    *error = ip + " is not an IPv4 address";
    ::close(fd);
    return 0;
  }
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    *error = sys_error("bind " + ip + ":0");
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
  if (!read_random(bytes, sizeof(bytes), error)) return "";
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * sizeof(bytes));
  for (unsigned char b : bytes) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 0xf]);
  }
  return out;
}

namespace {

std::vector<std::pair<std::string, std::string>> launcher_vars(const JobInfo& job, const RankPlace& place) {
  return {{knob::KF_RANK, std::to_string(place.rank)},
          {knob::KF_SIZE, std::to_string(job.size)},
          {knob::KF_LOCAL_RANK, std::to_string(place.local_rank)},
          {knob::KF_LOCAL_SIZE, std::to_string(place.local_size)},
          {knob::KF_ROOT_ADDR, job.root_addr},
          {knob::KF_JOB_SECRET, job.job_secret}};
}

}  // namespace

bool is_launcher_variable(const std::string& name) {
  for (const char* v : kLauncherVars) {
    if (name == v) return true;
  }
  return false;
}

std::vector<std::string> build_rank_env(const char* const* base,
                                        const std::vector<std::pair<std::string, std::string>>& exports,
                                        const JobInfo& job, const RankPlace& place) {
  // Ordered by name so every rank sees the same, deterministic environment.
  std::map<std::string, std::string> vars;
  for (const char* const* p = base; p != nullptr && *p != nullptr; ++p) {
    const char* eq = std::strchr(*p, '=');
    if (eq == nullptr) continue;  // malformed entry: not passed on
    vars[std::string(*p, eq)] = eq + 1;
  }
  for (const auto& [name, value] : exports) vars[name] = value;

  for (const auto& [name, value] : launcher_vars(job, place)) vars[name] = value;

  std::vector<std::string> out;
  out.reserve(vars.size());
  for (const auto& [name, value] : vars) out.push_back(name + "=" + value);
  return out;
}

std::string shell_quote(const std::string& text) {
  bool safe = !text.empty();
  for (char c : text) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              std::strchr("_@%+=:,./-", c) != nullptr;
    if (!ok) safe = false;
  }
  if (safe) return text;
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  out += "'";
  return out;
}

std::string build_remote_command(const std::vector<std::pair<std::string, std::string>>& exports,
                                 const JobInfo& job, const RankPlace& place,
                                 const std::vector<std::string>& command, const std::string& cwd,
                                 bool watch_stdin) {
  // Later assignments win in env, as with -x locally; launcher variables last.
  std::string run = "env";
  for (const auto& [name, value] : exports) {
    if (!is_launcher_variable(name)) run += " " + shell_quote(name + "=" + value);
  }
  for (const auto& [name, value] : launcher_vars(job, place))
    run += " " + shell_quote(name + "=" + value);
  for (const std::string& word : command) run += " " + shell_quote(word);
  // exec: the remote-exec command's process becomes the rank, so signals to
  // it (and its process group) reach the rank itself, with their usual
  // dispositions, and its exit status is the rank's.
  if (!watch_stdin) {
    return (cwd.empty() ? "" : "cd " + shell_quote(cwd) + " 2>/dev/null; ") + "exec " + run;
  }
  // A POSIX shell (whatever the remote login shell) changes to the
  // directory, then, when its stdin is a pipe or a socket (kfrun's held
  // pipe, passed on as ssh does; not /dev/null or a terminal), starts a
  // watcher of it, and execs the rank. At end of file the connection is gone
  // (kfrun or the remote-exec client ended): if the rank still runs, the
  // watcher sends its process group SIGTERM, and SIGKILL 3 s later, as kfrun
  // does to local ranks (ssh signals nothing when its client dies). The
  // watcher
  //  - is started from a subshell, so it is no child of the rank (which may
  //    wait for all of its children);
  //  - stays in the rank's process group (so the group's number cannot be
  //    reused while it may signal it) and ignores the SIGTERM it sends;
  //  - execs a shell whose argv holds no variable of the rank (the job
  //    secret);
  //  - reads descriptor 3: a shell without job control gives an asynchronous
  //    command /dev/null as its stdin; and lets go of it at end of file (ssh
  //    may share that socket with the rank's stdout).
  // The directory and the rank's words are positional parameters: the
  // script holds no user data (nor a single quote or a backslash pair).
  const std::string watcher =
      "trap \\\"\\\" TERM; while read -r kf_line; do :; done; exec 0<&-; "
      "kill -0 \\$1 2>/dev/null || exit 0; "
      "kill -TERM -\\$1 2>/dev/null || kill -TERM \\$1 2>/dev/null; sleep 3; "
      "kill -KILL -\\$1 2>/dev/null || kill -KILL \\$1 2>/dev/null";
  const std::string script =
      "[ -z \"$1\" ] || cd \"$1\" 2>/dev/null; shift; "
      "if [ -p /dev/stdin ] || [ -S /dev/stdin ]; then exec 3<&0; "
      "( exec sh -c \"" +
      watcher +
      "\" kf-watch $$ <&3 >/dev/null 2>&1 & ); exec 3<&-; fi; "
      "exec \"$@\" </dev/null";
  return "exec sh -c " + shell_quote(script) + " kf-rank " + shell_quote(cwd) + " " + run;
}

}  // namespace kfrun
