#include "bootstrap/rendezvous.h"

#include <thread>

#include "base/log.h"
#include "transport/socket.h"

namespace kf {
namespace {

constexpr uint32_t kMaxRecordBytes = 4096;
constexpr int kStrangerMs = 3000;
// The server's rank in the handshake; clients use their own rank.
constexpr uint32_t kServerId = 0xffffffffu;

void put32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}
uint32_t get32(const uint8_t* p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

struct Arrival {
  Fd fd;
  std::string record;
  bool present = false;
};

// Reads one client's (size, rank, record) after a successful handshake.
Status read_arrival(int fd, const Deadline& d, uint32_t* size, uint32_t* rank, std::string* rec) {
  uint8_t head[12];
  KF_RETURN_IF_ERROR(read_full(fd, head, sizeof(head), d));
  *size = get32(head);
  *rank = get32(head + 4);
  uint32_t len = get32(head + 8);
  if (len > kMaxRecordBytes) return remote_error("record too long");
  rec->resize(len);
  if (len > 0) KF_RETURN_IF_ERROR(read_full(fd, &(*rec)[0], len, d));
  return Status::ok();
}

void serve(Fd listener, JobSecret secret, int64_t timeout_ms) {
  Deadline deadline = Deadline::after_ms(timeout_ms);
  std::vector<Arrival> arrivals;
  int expected = -1, arrived = 0;
  while (expected < 0 || arrived < expected) {
    Fd fd;
    std::string from;
    Status st = accept_tcp(listener.get(), -1, deadline, &fd, &from);
    if (!st.is_ok()) {
      KF_LOG_WARN("rendezvous server gives up: " + st.message() + " (" +
                  std::to_string(arrived) + " of " + std::to_string(expected) + " ranks arrived)");
      return;
    }
    Deadline short_d = Deadline::after_ms(kStrangerMs);
    HandshakeResult hs;
    st = handshake(fd.get(), secret, ConnKind::kRendezvous, Role::kAcceptor, kServerId, 0, -1,
                   short_d, &hs);
    uint32_t size = 0, rank = 0;
    std::string record;
    if (st.is_ok()) st = read_arrival(fd.get(), short_d, &size, &rank, &record);
    if (st.is_ok() && (size == 0 || size > (1u << 16) || rank >= size || rank != hs.peer_rank)) {
      st = remote_error("bad rank " + std::to_string(rank) + " of " + std::to_string(size));
    }
    if (st.is_ok() && expected >= 0 && size != static_cast<uint32_t>(expected)) {
      st = remote_error("rank " + std::to_string(rank) + " says the job has " +
                        std::to_string(size) + " ranks, others said " + std::to_string(expected));
    }
    if (!st.is_ok()) {
      KF_LOG_WARN("rendezvous rejected a connection from " + from + ": " + st.message());
      continue;
    }
    if (expected < 0) {
      expected = static_cast<int>(size);
      arrivals.resize(size);
    }
    Arrival& a = arrivals[rank];
    if (a.present) {
      KF_LOG_WARN("rendezvous: rank " + std::to_string(rank) + " arrived twice; keeping the newer");
      --arrived;
    }
    a.fd = std::move(fd);
    a.record = std::move(record);
    a.present = true;
    ++arrived;
  }
  std::string table;
  put32(&table, static_cast<uint32_t>(expected));
  for (auto& a : arrivals) {
    put32(&table, static_cast<uint32_t>(a.record.size()));
    table += a.record;
  }
  for (size_t r = 0; r < arrivals.size(); ++r) {
    Status st = write_full(arrivals[r].fd.get(), table.data(), table.size(), deadline);
    if (!st.is_ok()) KF_LOG_WARN("rendezvous: cannot answer rank " + std::to_string(r) + ": " + st.message());
  }
}

}  // namespace

Status start_rendezvous_server(RendezvousPoint* point, int64_t timeout_ms) {
  Fd listener;
  uint16_t port = 0;
  KF_RETURN_IF_ERROR(listen_tcp(point->host, point->port, &listener, &port));
  point->port = port;
  std::thread(serve, std::move(listener), point->secret, timeout_ms).detach();
  return Status::ok();
}

Status rendezvous_exchange(const RendezvousPoint& point, int rank, int size,
                           const RecordMaker& make_record, const Deadline& deadline,
                           std::vector<std::string>* records) {
  Fd fd;
  KF_RETURN_IF_ERROR(connect_tcp(point.host, point.port, deadline, &fd));
  HandshakeResult hs;
  Status st = handshake(fd.get(), point.secret, ConnKind::kRendezvous, Role::kDialer,
                        static_cast<uint32_t>(rank), 0, static_cast<int64_t>(kServerId), deadline,
                        &hs);
  if (!st.is_ok()) {
    return Status(st.code(), "rendezvous at " + join_host_port(point.host, point.port) + ": " +
                                 st.message());
  }
  std::string record;
  KF_RETURN_IF_ERROR(make_record(local_ip_of(fd.get()), &record));
  std::string msg;
  put32(&msg, static_cast<uint32_t>(size));
  put32(&msg, static_cast<uint32_t>(rank));
  put32(&msg, static_cast<uint32_t>(record.size()));
  msg += record;
  KF_RETURN_IF_ERROR(write_full(fd.get(), msg.data(), msg.size(), deadline));
  uint8_t head[4];
  st = read_full(fd.get(), head, 4, deadline);
  if (!st.is_ok()) {
    return Status(st.code(), "waiting for all " + std::to_string(size) +
                                 " ranks at the rendezvous: " + st.message());
  }
  if (get32(head) != static_cast<uint32_t>(size)) return remote_error("rendezvous table size mismatch");
  records->assign(static_cast<size_t>(size), std::string());
  for (auto& r : *records) {
    KF_RETURN_IF_ERROR(read_full(fd.get(), head, 4, deadline));
    uint32_t len = get32(head);
    if (len > kMaxRecordBytes) return remote_error("rendezvous record too long");
    r.resize(len);
    if (len > 0) KF_RETURN_IF_ERROR(read_full(fd.get(), &r[0], len, deadline));
  }
  return Status::ok();
}

}  // namespace kf
