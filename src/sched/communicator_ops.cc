// The blocking collectives of Communicator: each is one named operation on
// the engine, running its algorithm on the calling thread.
#include "algo/collectives.h"
#include "algo/shm_collectives.h"
#include "base/dtype.h"
#include "sched/op_arena.h"
#include "sched/op_kind.h"
#include "sched/communicator.h"

namespace kf {
namespace {

OpSignature sig(OpKind kind, size_t count, int dtype, int op, int root) {
  OpSignature s;
  s.kind = kind;
  s.count = count;
  s.dtype = dtype;
  s.op = op;
  s.root = root;
  return s;
}

// A zero-length collective moves no data, but it is still a named operation
// with its own sequence number on every rank: it runs as a barrier under the
// operation's name and signature, so a rank that called it with a nonzero
// count meets frames with a different signature (an error) instead of
// waiting for an operation its peer never runs.
Engine::Body unless_empty(size_t count, const AlgoOptions& algo, Engine::Body body) {
  if (count > 0) return body;
  return [&algo](Peers& p) { return kf::barrier(p, algo); };
}

}  // namespace

// Blocking calls on one communicator run one at a time: they must be issued
// in the same order on every rank, and concurrent calls from several threads
// would have no defined order (and would share the staging area).
Status Communicator::run_blocking(const std::string& name, const OpSignature& s,
                                  const Engine::Body& body) {
  std::lock_guard<std::mutex> lock(blocking_mu_);
  return engine_.run(name, s, body);
}

Status Communicator::all_reduce(const void* send, void* recv, size_t count, kf_dtype_t dt,
                                kf_op_t op) {
  const OpSignature s = sig(kAllReduce, count, dt, op, -1);
  return run_blocking("kf.all_reduce", s, [&](Peers& p) {
    // Read once per operation: set_strategy() runs between blocking calls.
    const Strategy strat = strategy();
    if (use_arena_ && (strat == Strategy::kAuto || strat == Strategy::kFlat)) {
      OpArena arena(shm_.get(), 0, &engine_, Deadline::after_ms(opts_.timeout_ms),
                    &arena_next_buffer_, single_copy_);
      Status st = arena_all_reduce(arena, s.digest(), send, recv, count, dt, op, one_shot_bytes_);
      // A failed staging operation leaves the ranks' barriers out of step:
      // the communicator cannot be used again.
      if (!st.is_ok()) engine_.abort(st);
      return st;
    }
    if (count == 0) return kf::barrier(p, algo_);  // see unless_empty()
    return strategy_all_reduce(p, algo_, strategy_opts_, host_layout(), strat, send, recv, count,
                               dt, op);
  });
}

Status Communicator::broadcast(const void* send, void* recv, size_t count, kf_dtype_t dt,
                               int root) {
  return run_blocking("kf.broadcast", sig(kBroadcast, count, dt, -1, root),
                      unless_empty(count, algo_, [&](Peers& p) {
                        return strategy_broadcast(p, algo_, strategy_opts_, host_layout(),
                                                  strategy(), send, recv, count, dt, root);
                      }));
}

Status Communicator::reduce(const void* send, void* recv, size_t count, kf_dtype_t dt, kf_op_t op,
                            int root) {
  return run_blocking("kf.reduce", sig(kReduce, count, dt, op, root),
                      unless_empty(count, algo_, [&](Peers& p) {
                        return kf::reduce(p, algo_, send, recv, count, dt, op, root);
                      }));
}

Status Communicator::all_gather(const void* send, void* recv, size_t count, kf_dtype_t dt) {
  return run_blocking("kf.all_gather", sig(kAllGather, count, dt, -1, -1),
                      unless_empty(count, algo_, [&](Peers& p) {
                        return strategy_all_gather(p, algo_, strategy_opts_, host_layout(),
                                                   strategy(), send, recv, count, dt);
                      }));
}

Status Communicator::reduce_scatter(const void* send, void* recv, size_t count, kf_dtype_t dt,
                                    kf_op_t op) {
  return run_blocking("kf.reduce_scatter", sig(kReduceScatter, count, dt, op, -1),
                      unless_empty(count, algo_, [&](Peers& p) {
                        return kf::reduce_scatter(p, algo_, send, recv, count, dt, op);
                      }));
}

Status Communicator::all_to_all(const void* send, void* recv, size_t count, kf_dtype_t dt) {
  return run_blocking("kf.all_to_all", sig(kAllToAll, count, dt, -1, -1),
                      unless_empty(count, algo_, [&](Peers& p) {
                        return kf::all_to_all(p, algo_, send, recv, count, dt);
                      }));
}

Status Communicator::gather(const void* send, void* recv, size_t count, kf_dtype_t dt, int root) {
  return run_blocking("kf.gather", sig(kGather, count, dt, -1, root),
                      unless_empty(count, algo_, [&](Peers& p) {
                        return kf::gather(p, algo_, send, recv, count, dt, root);
                      }));
}

Status Communicator::scatter(const void* send, void* recv, size_t count, kf_dtype_t dt, int root) {
  return run_blocking("kf.scatter", sig(kScatter, count, dt, -1, root),
                      unless_empty(count, algo_, [&](Peers& p) {
                        return kf::scatter(p, algo_, send, recv, count, dt, root);
                      }));
}

Status Communicator::barrier() {
  return run_blocking("kf.barrier", sig(kBarrier, 0, -1, -1, -1),
                     [&](Peers& p) { return kf::barrier(p, algo_); });
}

// Point-to-point messages are named operations too: the name is the ordered
// pair of ranks, so sends and receives between two ranks match in call order.
Status Communicator::send(const void* buf, size_t count, kf_dtype_t dt, int peer) {
  std::string name = "kf.p2p." + std::to_string(rank_) + ">" + std::to_string(peer);
  size_t bytes = count * dtype_size(dt);
  return run_blocking(name, sig(kSendRecv, count, dt, -1, -1), [&](Peers& p) {
    return p.wait(p.isend(peer, Tag{}, buf, bytes));
  });
}

Status Communicator::recv(void* buf, size_t count, kf_dtype_t dt, int peer) {
  std::string name = "kf.p2p." + std::to_string(peer) + ">" + std::to_string(rank_);
  size_t bytes = count * dtype_size(dt);
  return run_blocking(name, sig(kSendRecv, count, dt, -1, -1), [&](Peers& p) {
    return p.wait(p.irecv(peer, Tag{}, buf, bytes));
  });
}

}  // namespace kf
