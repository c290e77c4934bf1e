// Rendezvous: how the ranks of a new communicator learn each other's
// addresses. Rank 0 (or whoever made the unique id) hosts a small TCP server;
// every rank connects, proves it knows the job secret, sends its record
// (data address and host identity), and receives all records once every rank
// has arrived. It is a one-shot all-gather; the server exits afterwards.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "base/status.h"
#include "transport/handshake.h"

namespace kf {

struct RendezvousPoint {
  std::string host;
  uint16_t port = 0;
  JobSecret secret{};
};

// Starts the server thread on point.host:point.port (port 0 = any; the bound
// port is written back). The server serves one job and stops by itself when
// done or when `timeout_ms` passes.
Status start_rendezvous_server(RendezvousPoint* point, int64_t timeout_ms);

// Makes this rank's record once connected: `local_ip` is this host's address
// on the route to the server, the natural address to advertise.
using RecordMaker = std::function<Status(const std::string& local_ip, std::string* record)>;

// Sends this rank's record and receives every rank's record, in rank order.
// Retries the connection until the deadline (the server may start later).
Status rendezvous_exchange(const RendezvousPoint& point, int rank, int size,
                           const RecordMaker& make_record, const Deadline& deadline,
                           std::vector<std::string>* records);

}  // namespace kf
