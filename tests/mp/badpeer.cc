// Bad-peer test (kfrun -np 2): while the ranks run a sequence of checked
// collectives, a thread of each rank connects to every TCP port the rank
// listens on (found from /proc/self/net/tcp{,6} and the socket inodes in
// /proc/self/fd) and to KF_ROOT_ADDR, and sends garbage, a truncated frame
// header, a header with a huge length, nothing at all, and one byte from a
// client that then stays silent. The collectives must complete with exact
// results, and the communicator must still work afterwards.
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "mp_common.h"

namespace {

struct Endpoint {
  std::string host;
  int port;
  bool operator<(const Endpoint& o) const { return host != o.host ? host < o.host : port < o.port; }
};

std::set<unsigned long> my_socket_inodes() {
  std::set<unsigned long> inodes;
  DIR* d = opendir("/proc/self/fd");
  if (!d) return inodes;
  while (dirent* e = readdir(d)) {
    char path[300], link[128];
    std::snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
    const ssize_t n = readlink(path, link, sizeof link - 1);
    if (n <= 0) continue;
    link[n] = '\0';
    unsigned long ino;
    if (std::sscanf(link, "socket:[%lu]", &ino) == 1) inodes.insert(ino);
  }
  closedir(d);
  return inodes;
}

// Listening sockets of this process: (address to connect to, port).
std::set<Endpoint> my_listening_endpoints() {
  const std::set<unsigned long> mine = my_socket_inodes();
  std::set<Endpoint> out;
  for (const char* file : {"/proc/self/net/tcp", "/proc/self/net/tcp6"}) {
    std::ifstream in(file);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::istringstream ss(line);
      std::string sl, local, remote, state, txrx, tr, retr;
      unsigned long uid, timeout, inode;
      if (!(ss >> sl >> local >> remote >> state >> txrx >> tr >> retr >> uid >> timeout >> inode))
        continue;
      if (state != "0A" || !mine.count(inode)) continue;  // 0A = LISTEN
      const size_t colon = local.find(':');
      const std::string addr = local.substr(0, colon);
      const int port = static_cast<int>(std::strtol(local.substr(colon + 1).c_str(), nullptr, 16));
      std::string host = "127.0.0.1";
      if (addr.size() == 8 && addr != "00000000") {
        const uint32_t a = static_cast<uint32_t>(std::strtoul(addr.c_str(), nullptr, 16));
        in_addr ia;
        ia.s_addr = a;  // /proc prints the address in host order of the raw bytes
        host = inet_ntoa(ia);
      } else if (addr.size() == 32 && addr != std::string(32, '0')) {
        host = "::1";  // specific IPv6 addresses: try loopback (good enough in one host)
      }
      out.insert(Endpoint{host, port});
    }
  }
  return out;
}

int connect_to(const Endpoint& ep) {
  const bool v6 = ep.host.find(':') != std::string::npos;
  const int fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  int rc;
  if (v6) {
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_port = htons(static_cast<uint16_t>(ep.port));
    inet_pton(AF_INET6, ep.host.c_str(), &a.sin6_addr);
    rc = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  } else {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(ep.port));
    inet_pton(AF_INET, ep.host.c_str(), &a.sin_addr);
    rc = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  }
  if (rc != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

void send_all(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t k = send(fd, c, n, MSG_NOSIGNAL);
    if (k <= 0) return;  // the library may close on us: fine
    c += k;
    n -= static_cast<size_t>(k);
  }
}

struct Attack {
  int rank;
  std::set<Endpoint> targets;
  std::atomic<bool> done{false};
  int connections = 0;
  std::map<Endpoint, int> per_endpoint;  // connections made (refused ones not counted)
};

void* attack_main(void* arg) {
  Attack* a = static_cast<Attack*>(arg);
  unsigned seed = 12345u + static_cast<unsigned>(a->rank);
  for (int round = 0; round < 3; ++round) {
    std::vector<int> silent;
    for (const Endpoint& ep : a->targets) {
      // 1. A client that sends one byte and then stays silent while we go on.
      int fd = connect_to(ep);
      if (fd >= 0) {
        send_all(fd, "K", 1);
        silent.push_back(fd);
        ++a->connections;
        ++a->per_endpoint[ep];
      }
      // 2. Random garbage.
      if ((fd = connect_to(ep)) >= 0) {
        char junk[4096];
        for (char& c : junk) c = static_cast<char>(rand_r(&seed));
        send_all(fd, junk, sizeof junk);
        close(fd);
        ++a->connections;
        ++a->per_endpoint[ep];
      }
      // 3. A truncated header: a few bytes, then EOF.
      if ((fd = connect_to(ep)) >= 0) {
        send_all(fd, "KFv1\x01\x00\x00", 7);
        close(fd);
        ++a->connections;
        ++a->per_endpoint[ep];
      }
      // 4. Header-sized records whose every length-like field is huge.
      if ((fd = connect_to(ep)) >= 0) {
        unsigned char hdr[64];
        std::memset(hdr, 0xFF, sizeof hdr);
        send_all(fd, hdr, sizeof hdr);
        uint64_t words[8];
        for (uint64_t& w : words) w = 0x7FFFFFFFFFFFFFF0ull;
        send_all(fd, words, sizeof words);
        close(fd);
        ++a->connections;
        ++a->per_endpoint[ep];
      }
      // 4b. A header in the shape of a data frame ("KFF1", version 2, type
      // data) announcing 2^62 payload bytes, sent before any handshake.
      if ((fd = connect_to(ep)) >= 0) {
        unsigned char frame[48] = {'K', 'F', 'F', '1', 2, 0, 1, 0};
        const uint64_t huge = 1ull << 62;
        std::memcpy(frame + 40, &huge, sizeof huge);
        send_all(fd, frame, sizeof frame);
        send_all(fd, frame, 20);  // and a truncated second one
        close(fd);
        ++a->connections;
        ++a->per_endpoint[ep];
      }
      // 5. Connect and close at once.
      if ((fd = connect_to(ep)) >= 0) {
        close(fd);
        ++a->connections;
        ++a->per_endpoint[ep];
      }
    }
    usleep(300 * 1000);
    for (int fd : silent) close(fd);
  }
  a->done = true;
  return nullptr;
}

int check_i32(const char* what, int iter, const std::vector<int32_t>& got,
              const std::vector<int32_t>& exp, int rank) {
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != exp[i]) {
      std::printf("FAIL rank %d iteration %d: %s: [%zu] expected %d got %d\n", rank, iter, what, i,
                  exp[i], got[i]);
      return 1;
    }
  }
  return 0;
}

}  // namespace

int main() {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  int rank = 0, n = 1;
  kf_comm_t comm = kfmp::init_or_die("badpeer", &rank, &n);

  Attack attack;
  attack.rank = rank;
  attack.targets = my_listening_endpoints();
  if (const char* root = std::getenv("KF_ROOT_ADDR")) {
    const std::string s = root;
    const size_t colon = s.rfind(':');
    if (colon != std::string::npos) {
      std::string host = s.substr(0, colon);
      if (!host.empty() && host.front() == '[') host = host.substr(1, host.size() - 2);
      attack.targets.insert(Endpoint{host, std::atoi(s.c_str() + colon + 1)});
    }
  }
  std::string list;
  for (const Endpoint& ep : attack.targets) list += " " + ep.host + ":" + std::to_string(ep.port);
  std::printf("rank %d: attacking%s\n", rank, list.c_str());

  kf_status_t st = kf_barrier(comm);
  if (st != KF_SUCCESS) {
    std::printf("FAIL rank %d: barrier: %s: %s\n", rank, kf_status_string(st),
                kf_comm_last_error(comm));
    return 1;
  }
  pthread_t thread;
  pthread_create(&thread, nullptr, attack_main, &attack);

  int failed = 0, iter = 0;
  for (;; ++iter) {
    const size_t counts[2] = {37, 100003};
    for (size_t count : counts) {
      std::vector<int32_t> send(count), recv(count, -1), exp(count);
      for (size_t i = 0; i < count; ++i) {
        send[i] = static_cast<int32_t>(i * 3 + static_cast<size_t>(rank) * 1000 +
                                       static_cast<size_t>(iter));
        exp[i] = 0;
        for (int r = 0; r < n; ++r)
          exp[i] += static_cast<int32_t>(i * 3 + static_cast<size_t>(r) * 1000 +
                                         static_cast<size_t>(iter));
      }
      st = kf_all_reduce(comm, send.data(), recv.data(), count, KF_INT32, KF_SUM);
      if (st != KF_SUCCESS) break;
      failed += check_i32("all_reduce", iter, recv, exp, rank);

      std::vector<int32_t> b(count), bexp(count);
      for (size_t i = 0; i < count; ++i)
        bexp[i] = static_cast<int32_t>(i ^ static_cast<size_t>(iter));
      if (rank == iter % n) b = bexp;
      st = kf_broadcast(comm, b.data(), b.data(), count, KF_INT32, iter % n);
      if (st != KF_SUCCESS) break;
      failed += check_i32("broadcast", iter, b, bexp, rank);

      std::vector<int32_t> g(count * static_cast<size_t>(n), -1), gexp(g.size());
      for (size_t i = 0; i < g.size(); ++i)
        gexp[i] = static_cast<int32_t>(i + static_cast<size_t>(iter));
      st = kf_all_gather(comm, gexp.data() + static_cast<size_t>(rank) * count, g.data(), count,
                         KF_INT32);
      if (st != KF_SUCCESS) break;
      failed += check_i32("all_gather", iter, g, gexp, rank);
    }
    if (st != KF_SUCCESS) break;
    // Go on until every rank's attacker has finished (and at least 20 rounds).
    int32_t busy = attack.done ? 0 : 1, any_busy = 0;
    st = kf_all_reduce(comm, &busy, &any_busy, 1, KF_INT32, KF_MAX);
    if (st != KF_SUCCESS) break;
    if (!any_busy && iter >= 20) break;
    if (failed) break;
  }
  if (st != KF_SUCCESS) {
    std::printf("FAIL rank %d iteration %d: %s: %s\n", rank, iter, kf_status_string(st),
                kf_comm_last_error(comm));
    ++failed;
  }
  pthread_join(thread, nullptr);
  if (attack.targets.empty() || attack.connections == 0) {
    std::printf("FAIL rank %d: found no listening port to attack (%zu endpoints, %d connections)\n",
                rank, attack.targets.size(), attack.connections);
    ++failed;
  }
  if (st == KF_SUCCESS) {
    int32_t one = 1, total = 0;
    st = kf_all_reduce(comm, &one, &total, 1, KF_INT32, KF_SUM);
    if (st != KF_SUCCESS || total != n) {
      std::printf("FAIL rank %d: final all_reduce: %s, total %d\n", rank, kf_status_string(st),
                  total);
      ++failed;
    }
  }
  st = kf_comm_destroy(comm);
  if (st != KF_SUCCESS) {
    std::printf("FAIL rank %d: kf_comm_destroy: %s\n", rank, kf_status_string(st));
    ++failed;
  }
  std::string detail;
  for (const Endpoint& ep : attack.targets) {
    const auto it = attack.per_endpoint.find(ep);
    detail += " " + ep.host + ":" + std::to_string(ep.port) + "=" +
              std::to_string(it == attack.per_endpoint.end() ? 0 : it->second);
  }
  std::printf("rank %d: hostile connections made per endpoint:%s (0 = port closed by then)\n", rank,
              detail.c_str());
  std::printf("%s badpeer rank %d: %d iterations, %d hostile connections to %zu endpoints\n",
              failed ? "FAIL" : "PASS", rank, iter + 1, attack.connections, attack.targets.size());
  return failed ? 1 : 0;
}
