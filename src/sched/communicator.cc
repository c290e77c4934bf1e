#include "sched/communicator.h"

#include <cstdio>
#include <thread>

#include "base/config.h"
#include "base/host_id.h"
#include "base/log.h"
#include "sched/async_lane.h"
#include "topo/binding.h"
#include "transport/frame.h"
#include "transport/socket.h"

namespace kf {
namespace {

EngineOptions engine_options(int rank, int size, const CommOptions& o) {
  EngineOptions e;
  e.rank = rank;
  e.size = size;
  e.epoch = 1;
  e.timeout_ms = o.timeout_ms;
  return e;
}

AlgoOptions algo_options_from_knobs() {
  AlgoOptions o;
  std::string algo = knob_string(Knob::KF_ALGO);
  if (algo == "ring") {
    o.algorithm = Algorithm::kRing;
  } else if (algo == "rd") {
    o.algorithm = Algorithm::kRecursiveDoubling;
  } else {
    if (algo != "auto") KF_LOG_WARN("KF_ALGO=" + algo + " is not auto, ring or rd; using auto");
    o.algorithm = Algorithm::kAuto;
  }
  int64_t threshold = knob_int(Knob::KF_RING_THRESHOLD_BYTES);
  if (threshold >= 0) o.ring_threshold_bytes = static_cast<size_t>(threshold);
  o.chunk_bytes = static_cast<size_t>(knob_positive(Knob::KF_CHUNK_BYTES));
  return o;
}

}  // namespace

Communicator::Communicator(int rank, int size, const CommOptions& opts)
    : rank_(rank), size_(size), opts_(opts), algo_(algo_options_from_knobs()),
      engine_(engine_options(rank, size, opts)),
      async_(new AsyncEngine(&engine_, algo_, opts.timeout_ms)) {
  // Control frames of asynchronous operations go to the async engine, even
  // before this rank submits the operation they belong to. Transport threads
  // may still deliver frames while the communicator is destroyed: they reach
  // the engine only under hook_mu_, and never after ~Communicator cut it off.
  hook_target_ = async_.get();
  engine_.set_on_break([this](const Status& why) {
    std::lock_guard<std::mutex> lock(hook_mu_);
    if (hook_target_ != nullptr) hook_target_->on_broken(why);
  });
  engine_.mailbox().set_control_hook([this](int src, const FrameHeader& h) {
    bool drop = false;
    {
      std::lock_guard<std::mutex> lock(hook_mu_);
      if (hook_target_ != nullptr) {
        // A transport thread must not see an exception (the only one
        // possible is a failed allocation: the frame is then ignored and
        // the operation ends by its timeout).
        try {
          drop = hook_target_->on_control_frame(src, h.name_hash, h.seq, h.step, h.signature);
        } catch (...) {
          KF_LOG_ERROR("out of memory handling a control frame from rank " + std::to_string(src));
        }
      }
    }
    return drop || AsyncEngine::consumes(h.step);
  });
  AsyncEngine* async = async_.get();
  step_tuner_.reset(new StepTuner(
      Tuner::enabled_from_env(), TuneParams{async->partition_bytes(), async->credit_bytes()},
      [this](double* v) { return all_reduce(v, v, 1, KF_FLOAT64, KF_MAX); },
      [this, async](const TuneParams& p) {
        async->set_partition_bytes(p.partition_bytes);
        async->set_credit_bytes(p.credit_bytes);
        if (observer_) observer_->on_tune(p);
      }));
}

Communicator::~Communicator() {
  shutdown();
  async_->close();  // ends what is left while frames may still reach it
  {
    std::lock_guard<std::mutex> lock(hook_mu_);
    hook_target_ = nullptr;
  }
  async_.reset();
}

Status Communicator::create(const RendezvousPoint& root, int rank, int size,
                            const CommOptions& opts, std::unique_ptr<Communicator>* out) {
  std::unique_ptr<Communicator> c(new Communicator(rank, size, opts));
  c->hosts_.assign(static_cast<size_t>(size), host_identity());
  KF_RETURN_IF_ERROR(discover_local_topology(&c->local_topo_));
  if (size > 1) KF_RETURN_IF_ERROR(c->connect(root));
  if (size == 1) {
    c->topology_ = JobTopology({c->local_topo_});
    c->bind();
  }
  *out = std::move(c);
  return Status::ok();
}

Status Communicator::connect(const RendezvousPoint& root) {
  // A congestion control the kernel refuses fails here, before the peers
  // wait for this rank at the rendezvous.
  KF_RETURN_IF_ERROR(check_congestion(knob_string(Knob::KF_TCP_CONGESTION)));
  Deadline deadline = Deadline::after_ms(opts_.timeout_ms);
  secret_ = root.secret;
  bool pinned_ip = knob_is_set(Knob::KF_IFNAME) || knob_is_set(Knob::KF_SUBNET);
  Listener listener;
  auto make = [&](const std::string& route_ip, std::string* record) -> Status {
    std::string ip = route_ip;
    if (pinned_ip) KF_RETURN_IF_ERROR(choose_listen_ip(&ip));
    KF_RETURN_IF_ERROR(open_listener(ip, &listener));
    *record = make_record(listener.address);
    return Status::ok();
  };
  std::vector<std::string> records;
  KF_RETURN_IF_ERROR(rendezvous_exchange(root, rank_, size_, make, deadline, &records));
  return connect_with_records(records, std::move(listener), deadline, /*bind_cpus=*/true);
}

Status Communicator::open_listener(const std::string& ip, Listener* out) {
  uint16_t port = 0;
  KF_RETURN_IF_ERROR(listen_tcp(ip, 0, &out->fd, &port));
  out->address = join_host_port(ip, port);
  return Status::ok();
}

std::string Communicator::make_record(const std::string& address) const {
  return address + "|" + host_identity() + "|" + encode(local_topo_);
}

Status Communicator::connect_with_records(const std::vector<std::string>& records,
                                          Listener listener, const Deadline& deadline,
                                          bool bind_cpus) {
  if (records.size() != static_cast<size_t>(size_)) {
    return internal_error("connect: " + std::to_string(records.size()) + " records for " +
                          std::to_string(size_) + " ranks");
  }
  std::vector<std::string> addresses, topo_records;
  hosts_.assign(records.size(), std::string());
  for (size_t r = 0; r < records.size(); ++r) {
    size_t bar = records[r].find('|');
    size_t bar2 = bar == std::string::npos ? bar : records[r].find('|', bar + 1);
    if (bar2 == std::string::npos) return remote_error("malformed rendezvous record of rank " + std::to_string(r));
    addresses.push_back(records[r].substr(0, bar));
    hosts_[r] = records[r].substr(bar + 1, bar2 - bar - 1);
    topo_records.push_back(records[r].substr(bar2 + 1));
  }
  Status topo = JobTopology::from_records(topo_records, &topology_);
  if (!topo.is_ok()) return remote_error("topology exchange: " + topo.message());
  // Before shared memory is allocated, so that first touch lands on our NUMA
  // node. A split communicator keeps the binding its process already has.
  if (bind_cpus) bind();
  if (size_ == 1) return Status::ok();
  TcpOptions t;
  t.rank = rank_;
  t.size = size_;
  t.epoch = 1;
  t.secret = secret_;
  t.socket_buffer_bytes = static_cast<int>(knob_int(Knob::KF_SOCKET_BUFFER_BYTES));
  t.congestion = knob_string(Knob::KF_TCP_CONGESTION);
  tcp_ = std::make_unique<TcpTransport>(t, &engine_.mailbox(), [this](int peer, const Status& why) {
    engine_.on_peer_lost(peer, why);
  });
  KF_RETURN_IF_ERROR(tcp_->adopt_listener(std::move(listener.fd), listener.address));
  KF_RETURN_IF_ERROR(tcp_->connect_all(addresses, deadline));
  engine_.attach(tcp_.get());
  KF_RETURN_IF_ERROR(connect_shm(addresses));
  async_->start_events();
  KF_LOG_INFO("communicator '" + opts_.name + "' rank " + std::to_string(rank_) + " of " +
              std::to_string(size_) + " connected, listening on " + tcp_->address());
  return Status::ok();
}

void Communicator::bind() {
  Status bound = apply_binding(topology_, rank_, local_topo_);
  if (!bound.is_ok()) KF_LOG_WARN("KF_BIND: " + bound.message());
}

namespace {
// Set-up agreements run one algorithm on every rank, whatever the KF_ALGO*
// knobs of each (they are not agreed).
AlgoOptions setup_algo() {
  AlgoOptions o;
  o.algorithm = Algorithm::kRecursiveDoubling;
  return o;
}
}  // namespace

Status Communicator::agree(const char* what, bool ok, bool* all_ok) {
  int64_t min = 0;
  bool equal = false;
  KF_RETURN_IF_ERROR(agree_min(what, ok ? 1 : 0, &min, &equal));
  *all_ok = min == 1;
  return Status::ok();
}

Status Communicator::agree_min(const char* what, int64_t mine, int64_t* min, bool* equal) {
  int64_t in[2] = {mine, -mine}, out[2] = {0, 0};  // the minimum and minus the maximum
  OpSignature sig;
  sig.kind = 0xfffe;
  KF_RETURN_IF_ERROR(engine_.run(std::string("kf.setup.") + what, sig, [&](Peers& p) {
    return kf::all_reduce(p, setup_algo(), in, out, 2, KF_INT64, KF_MIN);
  }));
  *min = out[0];
  *equal = out[0] == -out[1];
  return Status::ok();
}

Status Communicator::connect_shm(const std::vector<std::string>& addresses) {
  // A rank told to use TCP only makes every rank do so.
  bool shm_allowed = false;
  KF_RETURN_IF_ERROR(agree("shm_allowed", knob_string(Knob::KF_TRANSPORT) != "tcp", &shm_allowed));
  if (!shm_allowed) return Status::ok();
  ShmOptions o;
  o.rank = rank_;
  o.epoch = 1;
  for (int r = 0; r < size_; ++r) {
    if (hosts_[static_cast<size_t>(r)] == hosts_[static_cast<size_t>(rank_)]) o.local_ranks.push_back(r);
  }
  // Every rank takes part in the agreements below, even one alone on its host.
  bool want = o.local_ranks.size() > 1;
  int64_t ring = knob_int(Knob::KF_SHM_RING_BYTES);
  size_t peers = o.local_ranks.size() > 1 ? o.local_ranks.size() - 1 : 1;
  size_t bytes = ring > 0 ? static_cast<size_t>(ring) : (size_t(16) << 20) / peers;
  size_t pow2 = 64 * 1024;
  while (pow2 < bytes && pow2 < (size_t(4) << 20)) pow2 <<= 1;
  o.ring_bytes = pow2;
  int64_t staging = knob_int(Knob::KF_SHM_STAGING_BYTES);
  // Default: 256 KiB pieces per rank (cache sized), 512 KiB to 4 MiB in all.
  size_t stage = staging > 0 ? static_cast<size_t>(staging)
                             : std::min<size_t>(std::max<size_t>(o.local_ranks.size() << 18, 1 << 19), 4 << 20);
  // Every rank's piece of a round must hold at least 64 bytes.
  o.staging_bytes = std::max((stage + 63) / 64 * 64, o.local_ranks.size() * 64);
  o.oversubscribed = o.local_ranks.size() > std::thread::hardware_concurrency();
  // A communicator on one host gets the asynchronous lane's region (and
  // second staging area); whether it is used is agreed below.
  const bool one_host = o.local_ranks.size() == static_cast<size_t>(size_);
  if (one_host) o.lane_bytes = AsyncLane::region_bytes(static_cast<int>(o.local_ranks.size()));
  // The lowest local rank's data address is unique on this host while the
  // communicator lives: it names this communicator's segments.
  std::string id = addresses[static_cast<size_t>(o.local_ranks.front())] + "#1";
  char tag[17];
  std::snprintf(tag, sizeof(tag), "%016llx",
                static_cast<unsigned long long>(hash_name(id.data(), id.size())));
  o.tag = tag;

  Status created = want ? ShmTransport::create(o, &engine_.mailbox(), &shm_) : Status::ok();
  if (!created.is_ok()) KF_LOG_WARN("shared memory unavailable, using TCP: " + created.message());
  bool all_ok = false;
  KF_RETURN_IF_ERROR(agree("shm_create", created.is_ok(), &all_ok));
  Status mapped = (all_ok && want) ? shm_->map_peers() : Status::ok();
  if (!mapped.is_ok()) KF_LOG_WARN("cannot map peers' shared memory, using TCP: " + mapped.message());
  bool all_mapped = false;
  KF_RETURN_IF_ERROR(agree("shm_map", all_ok && mapped.is_ok(), &all_mapped));
  if (!all_mapped) {
    shm_.reset();  // unlinks our segment
    return Status::ok();
  }
  // From here every rank takes part in the agreements below, including a rank
  // alone on its host (it has no shared memory but others may).
  if (want) {
    shm_->unlink_own();
    shm_->expose_probe();  // can peers read our memory directly? probe it
  }
  bool all_exposed = false;
  KF_RETURN_IF_ERROR(agree("shm_expose", true, &all_exposed));
  bool probe_ok = !want || (knob_int(Knob::KF_SHM_SINGLE_COPY) != 0 && shm_->probe_single_copy());
  KF_RETURN_IF_ERROR(agree("shm_single_copy", probe_ok, &single_copy_));
  // Every rank of a shared-memory all_reduce must take the same algorithm:
  // ranks that were given different one-shot limits use the smallest.
  int64_t one_shot = 0;
  bool equal = true;
  KF_RETURN_IF_ERROR(agree_min("shm_one_shot",
                               std::max<int64_t>(0, knob_int(Knob::KF_SHM_ONE_SHOT_BYTES)),
                               &one_shot, &equal));
  if (!equal) {
    KF_LOG_WARN("KF_SHM_ONE_SHOT_BYTES differs between ranks: every rank uses the smallest, " +
                std::to_string(one_shot));
  }
  one_shot_bytes_ = static_cast<size_t>(one_shot);
  if (!want) {
    shm_.reset();
    single_copy_ = false;
    return Status::ok();
  }
  if (!single_copy_) KF_LOG_INFO("single-copy reads of peer memory are off; staging through shared memory");
  shm_->set_on_error([this](const Status& why) { engine_.abort(why); });
  engine_.attach_shm(shm_.get());
  // Every rank sees the same hosts, so every rank makes the same choice.
  use_arena_ = shm_->local_size() == size_ && algo_.algorithm == Algorithm::kAuto;
  if (one_host) {
    bool lane = false;
    KF_RETURN_IF_ERROR(
        agree("async_arena",
              knob_int(Knob::KF_ASYNC_ARENA) != 0 && algo_.algorithm == Algorithm::kAuto, &lane));
    if (lane) async_->enable_lane(shm_.get(), single_copy_, one_shot_bytes_);
  }
  return Status::ok();
}

void Communicator::shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  // Pending asynchronous operations finish (or time out) before the goodbyes.
  async_->drain(opts_.timeout_ms < 0 ? 10000 : opts_.timeout_ms);
  observer_.reset();  // the timeline detaches from the engine and writes its file
  if (tcp_) {
    // Goodbyes are a courtesy: wait for them a little, less so when the
    // communicator already broke (a peer may be hung).
    int64_t ms = opts_.timeout_ms < 0 ? 10000 : std::min<int64_t>(opts_.timeout_ms, 10000);
    if (!engine_.health().is_ok()) ms = std::min<int64_t>(ms, 1000);
    tcp_->shutdown(Deadline::after_ms(ms));
  }
}

}  // namespace kf
