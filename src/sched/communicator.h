// Communicator: one group of ranks and everything it owns: the engine with
// its named-operation table, the mailbox, and the transports to its peers.
// Several communicators may live in one process; there is no singleton.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "algo/collectives.h"
#include "algo/strategy.h"
#include "base/status.h"
#include "bootstrap/rendezvous.h"
#include "sched/async_engine.h"
#include "sched/engine.h"
#include "sched/step_tuner.h"
#include "topo/job_topology.h"
#include "transport/shm/shm_transport.h"
#include "transport/tcp/tcp_transport.h"

namespace kf {

struct CommOptions {
  int64_t timeout_ms = 60000;  // init and each operation; < 0 = never
  std::string name = "world";
};

// Something a layer above attaches to a communicator to watch it: src/api
// attaches the KF_TIMELINE timeline (monitor/trace_observer.h), so that this
// layer needs nothing of src/monitor. The communicator owns it and destroys
// it in shutdown(), after pending asynchronous operations have drained and
// before the goodbyes.
class CommObserver {
 public:
  virtual ~CommObserver() = default;
  // The online tuner has just installed `p` on the async engine (on the
  // thread in kf_comm_step).
  virtual void on_tune(const TuneParams& p) = 0;
};

// KF_STRATEGY and the KF_HIER_* knobs (comm_strategy.cc).
Strategy strategy_from_knobs();
StrategyOptions strategy_options_from_knobs();

class Communicator {
 public:
  // Joins the job at `root` as `rank` of `size` ranks (collective).
  static Status create(const RendezvousPoint& root, int rank, int size, const CommOptions& opts,
                       std::unique_ptr<Communicator>* out);
  ~Communicator();

  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::string& name() const { return opts_.name; }
  // Host identity of every rank (hostname/boot id), in rank order.
  const std::vector<std::string>& hosts() const { return hosts_; }
  // Layout of the whole job (src/topo), exchanged at init.
  const JobTopology& topology() const { return topology_; }

  // Splits this communicator, collectively over it (MPI_Comm_split): the
  // ranks that pass the same color >= 0 form a new, fully independent
  // communicator ordered by (key, rank here); color kNoColor gives none
  // (*out empty). See sched/communicator_split.cc.
  static constexpr int kNoColor = -1;
  Status split(int color, int key, const CommOptions& opts, std::unique_ptr<Communicator>* out);
  int64_t timeout_ms() const { return opts_.timeout_ms; }

  // Says goodbye to the peers and closes connections (bounded by the timeout).
  void shutdown();

  // Blocking collectives: each one is a named operation on the engine.
  Status all_reduce(const void* send, void* recv, size_t count, kf_dtype_t dt, kf_op_t op);
  Status broadcast(const void* send, void* recv, size_t count, kf_dtype_t dt, int root);
  Status reduce(const void* send, void* recv, size_t count, kf_dtype_t dt, kf_op_t op, int root);
  Status all_gather(const void* send, void* recv, size_t count, kf_dtype_t dt);
  Status reduce_scatter(const void* send, void* recv, size_t count, kf_dtype_t dt, kf_op_t op);
  Status all_to_all(const void* send, void* recv, size_t count, kf_dtype_t dt);
  Status gather(const void* send, void* recv, size_t count, kf_dtype_t dt, int root);
  Status scatter(const void* send, void* recv, size_t count, kf_dtype_t dt, int root);
  Status barrier();
  Status send(const void* buf, size_t count, kf_dtype_t dt, int peer);
  Status recv(void* buf, size_t count, kf_dtype_t dt, int peer);

  // Strategy of all_reduce, broadcast and all_gather (comm_strategy.cc).
  Strategy strategy() const { return static_cast<Strategy>(strategy_.load()); }
  // Collective, in the order of the blocking calls: every rank passes the
  // same kf_strategy_t value, or every rank fails and keeps the old one.
  Status set_strategy(int requested);
  // Gives an asynchronous all_reduce, broadcast or all_gather the strategy in
  // force now (other kinds stay flat). Called at submission: a switch
  // reaches the async operations submitted after it returns, never those
  // submitted before, so ranks that submit in the same order relative to
  // kf_comm_set_strategy agree (a disagreement fails as a signature mismatch).
  void apply_strategy(AsyncOpSpec* spec);
  // Runs a blocking operation defined elsewhere (src/sparse: sparse
  // all_reduce, PTO) as the named operation `name`, serialised with the
  // other blocking calls. The body sees the operation's Peers.
  Status run_custom(const std::string& name, const OpSignature& sig, const Engine::Body& body) {
    return run_blocking(name, sig, body);
  }
  // The algorithm options read from the KF_ALGO* knobs at creation.
  const AlgoOptions& algo_options() const { return algo_; }
  // Asynchronous named operations (include/kungfu/async.h).
  AsyncEngine& async() { return *async_; }
  // Bytes of early messages its mailbox holds (tests: nothing is left there).
  size_t unexpected_bytes() { return engine_.mailbox().unexpected_bytes(); }
  // The online tuner of async_'s partition size and credit (KF_AUTOTUNE).
  StepTuner& step_tuner() { return *step_tuner_; }
  // Attaches `observer` (null: none). Not thread-safe: src/api calls it once,
  // before the communicator's handle is returned to the application.
  void set_observer(std::unique_ptr<CommObserver> observer) { observer_ = std::move(observer); }

 private:
  Communicator(int rank, int size, const CommOptions& opts);
  // A listening socket opened before the ranks know each other: its address
  // goes into this rank's record.
  struct Listener {
    Fd fd;
    std::string address;
  };
  // Set-up in three steps, shared by the rendezvous and the split paths:
  // open a listener and make this rank's record ("address|host|topology"),
  // exchange the records (rendezvous server or parent communicator), then
  // connect to the ranks the records describe (rank order).
  Status connect(const RendezvousPoint& root);
  static Status open_listener(const std::string& ip, Listener* out);
  std::string make_record(const std::string& address) const;
  Status connect_with_records(const std::vector<std::string>& records, Listener listener,
                              const Deadline& deadline, bool bind_cpus);
  Status run_blocking(const std::string& name, const OpSignature& sig, const Engine::Body& body);
  // Sets up shared memory to the ranks on this host (collective; every rank
  // ends with it or, if any rank failed, all fall back to TCP).
  Status connect_shm(const std::vector<std::string>& addresses);
  // Applies KF_BIND once topology_ is known; warns, never fails.
  void bind();
  // Collective agreement used during set-up: true iff `ok` on every rank.
  Status agree(const char* what, bool ok, bool* all_ok);
  // Collective agreement on a value: `min`, the smallest of the ranks'
  // `mine` (> INT64_MIN: it is negated); `equal`, whether every rank gave
  // the same. Set-up agreements use one algorithm on every rank.
  Status agree_min(const char* what, int64_t mine, int64_t* min, bool* equal);

  const int rank_;
  const int size_;
  const CommOptions opts_;
  const AlgoOptions algo_;  // from the KF_ALGO* knobs, read once
  JobSecret secret_{};  // proves membership to peers; a split inherits it
  std::vector<std::string> hosts_;
  LocalTopology local_topo_;  // this rank's, discovered in create()
  JobTopology topology_;
  Engine engine_;
  std::unique_ptr<TcpTransport> tcp_;
  std::unique_ptr<ShmTransport> shm_;
  // After the transports: destroyed first, while they still carry frames.
  std::unique_ptr<AsyncEngine> async_;
  std::mutex hook_mu_;                   // guards hook_target_ against destruction
  AsyncEngine* hook_target_ = nullptr;   // async_ while it may take frames
  // Attached by src/api (the KF_TIMELINE timeline; null when off).
  std::unique_ptr<CommObserver> observer_;
  std::unique_ptr<StepTuner> step_tuner_;
  bool shut_down_ = false;
  std::mutex blocking_mu_;  // serialises blocking calls
  // Shared-memory collectives: used when every rank shares this host.
  bool use_arena_ = false;
  int arena_next_buffer_ = 0;
  size_t one_shot_bytes_ = 0;
  bool single_copy_ = false;  // peers' buffers readable with process_vm_readv
  // Strategies (comm_strategy.cc): the knobs, and the host layout built from
  // topology_ on first use. strategy_ changes only in set_strategy(), between
  // blocking calls, so every rank reads the same value in each collective.
  const HostLayout& host_layout();
  std::atomic<int> strategy_{static_cast<int>(strategy_from_knobs())};
  const StrategyOptions strategy_opts_ = strategy_options_from_knobs();
  std::once_flag layout_once_;
  std::atomic<bool> layout_ready_{false};  // layout_ is made (host_layout())
  HostLayout layout_;
};

}  // namespace kf
