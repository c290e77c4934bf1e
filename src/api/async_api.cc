// Asynchronous entry points (include/kungfu/async.h): argument checks and
// the request handles (api/request_table.h); the work is in
// sched/async_engine.
#include <cstring>
#include <memory>
#include <vector>

#include "api/async_submit.h"
#include "api/guard.h"
#include "api/request_table.h"
#include "api/validate.h"
#include "kungfu/kungfu.h"
#include "sched/any_completion.h"
#include "sched/op_kind.h"

namespace kf {
namespace api {
namespace {

// kf_request_wait_any sleeps until any request of the process completes,
// and at most this long: work handed out meanwhile (a started partition
// of one of its requests) is then looked for again.
constexpr int64_t kWaitAnyLookUs = 1000;

bool request_live(kf_request* r) {
  return RequestTable::get().live(r);
}

// The options the caller's struct covers, defaults for the rest.
Status read_options(const char* call, const kf_op_options_t* in, kf_op_options_t* out) {
  kf_op_options_t d = KF_OP_OPTIONS_INITIALIZER;
  *out = d;
  if (in == nullptr) return Status::ok();
  if (in->magic != KF_OP_OPTIONS_MAGIC || in->size < offsetof(kf_op_options_t, priority)) {
    return invalid_argument(std::string(call) +
                            ": opts is not initialised with KF_OP_OPTIONS_INITIALIZER");
  }
  std::memcpy(out, in, std::min(in->size, sizeof(kf_op_options_t)));
  out->size = sizeof(kf_op_options_t);
  return Status::ok();
}

Status check_name(const char* call, const char* name) {
  if (name == nullptr || name[0] == '\0') {
    return invalid_argument(std::string(call) + ": name must be a non-empty string");
  }
  size_t len = strnlen(name, KF_OP_NAME_MAX + 1);
  if (len > KF_OP_NAME_MAX) {
    return invalid_argument(std::string(call) + ": name is longer than " +
                            std::to_string(KF_OP_NAME_MAX) + " bytes");
  }
  if (std::strncmp(name, "kf.", 3) == 0) {
    return invalid_argument(std::string(call) + ": names starting with \"kf.\" are reserved ('" +
                            std::string(name) + "')");
  }
  return Status::ok();
}

// Common tail of every kf_i* call: options, handle, submission.
Status submit(const char* call, kf_comm* comm, AsyncOpSpec spec, const kf_op_options_t* opts_in,
              kf_request_t* req) {
  kf_op_options_t opts;
  KF_RETURN_IF_ERROR(read_options(call, opts_in, &opts));
  spec.priority = opts.priority;
  // An operation with its own body runs as one partition (it set the size).
  if (!spec.body) spec.partition_bytes = opts.partition_bytes;
  comm->impl->apply_strategy(&spec);
  AsyncEngine* engine = &comm->impl->async();
  // Registered before submission: the callback may run inside submit().
  // The engine takes the handle's own state, not a copy (each copy of a
  // shared_ptr is an atomic increment and decrement); without a handle it
  // makes one into `state`.
  std::shared_ptr<AsyncRequest> state;
  kf_request* handle =
      req != nullptr ? RequestTable::get().add(comm, engine, AsyncRequest::make()) : nullptr;
  struct Unhanded {  // unregisters the handle unless it is handed out (failure, exception)
    kf_request* h;
    ~Unhanded() {
      if (h != nullptr) RequestTable::get().drop(h);
    }
  } unhanded{handle};
  if (opts.callback != nullptr) {
    kf_request_callback_t cb = opts.callback;
    void* user = opts.user_data;
    spec.on_complete = [cb, user, handle](const Status& st) { cb(handle, st.code(), user); };
  }
  KF_RETURN_IF_ERROR(engine->submit(std::move(spec), handle != nullptr ? &handle->state : &state));
  unhanded.h = nullptr;
  if (handle != nullptr) *req = handle;
  return Status::ok();
}

AsyncOpSpec spec_of(const char* name, uint32_t kind, const void* send, void* recv, uint64_t count,
                    int dtype, int op, int root) {
  AsyncOpSpec s;
  s.name = name;
  s.kind = kind;
  s.send = send;
  s.recv = recv;
  s.count = count;
  s.dtype = static_cast<kf_dtype_t>(dtype);
  s.op = op;
  s.root = root;
  return s;
}

// Its status code; `rest`: the requests the caller waits for next
// (kf_request_wait_all).
kf_status_t wait_one(kf_request* r, const WaitRest& rest = WaitRest()) {
  if (r->state->done()) {
    r->state->flush_held();
  } else {
    r->engine->wait(r->state, rest);
  }
  const Status& st = r->state->status();
  if (!st.is_ok() && is_live(r->comm)) fail(r->comm, st);
  return st.code();
}

// Runs `body` (returning a kf_status_t) so that no exception reaches the C
// caller: one becomes KF_ERR_INTERNAL.
template <typename Body>
kf_status_t no_throw(Body&& body) noexcept {
  try {
    return body();
  } catch (...) {
    return KF_ERR_INTERNAL;
  }
}

// A completion callback may run on the thread that drives the engine (the
// shared-memory lane's driver runs them), so inside one a wait for a
// request that is not complete could wait for itself: refused, with the
// error recorded on the request's communicator.
kf_status_t refuse_wait_in_callback(const char* call, kf_request* r) {
  Status st = invalid_usage(std::string(call) +
                            ": called inside a completion callback for a request still in "
                            "progress; a callback may test requests but not wait for them");
  if (is_live(r->comm)) fail(r->comm, st);
  return st.code();
}

}  // namespace

Status check_async_name(const char* call, const char* name) { return check_name(call, name); }

Status submit_async(const char* call, kf_comm* comm, AsyncOpSpec spec,
                    const kf_op_options_t* opts, kf_request_t* req) {
  return submit(call, comm, std::move(spec), opts, req);
}

}  // namespace api
}  // namespace kf

using kf::Status;
using kf::api::Check;
using kf::api::guarded;

extern "C" {

// Each entry point: request pointer cleared, arguments checked as for the
// blocking call, then submitted.
#define KF_ASYNC_PROLOGUE(call)       \
  if (req != nullptr) *req = nullptr; \
  Check c(call, comm);                \
  c.comm();                           \
  if (!c.ok()) return c.status();     \
  KF_RETURN_IF_ERROR(kf::api::check_name(call, name))

KF_API kf_status_t kf_iall_reduce(kf_comm_t comm, const char* name, const void* sendbuf,
                                  void* recvbuf, uint64_t count, kf_dtype_t dtype_in, kf_op_t op_in,
                                  const kf_op_options_t* opts, kf_request_t* req) {
  const int dt = kf::api::raw_enum(dtype_in);
  const int op = kf::api::raw_enum(op_in);
  return guarded(comm, [&]() -> Status {
    KF_ASYNC_PROLOGUE("kf_iall_reduce");
    c.dtype(dt).op(op).count(count, dt).buffer(sendbuf, "sendbuf", count).buffer(recvbuf, "recvbuf", count);
    if (!c.ok()) return c.status();
    return kf::api::submit("kf_iall_reduce", comm,
                           kf::api::spec_of(name, kf::kAllReduce, sendbuf, recvbuf, count, dt, op, -1),
                           opts, req);
  });
}

KF_API kf_status_t kf_ibroadcast(kf_comm_t comm, const char* name, const void* sendbuf,
                                 void* recvbuf, uint64_t count, kf_dtype_t dtype_in, int root,
                                 const kf_op_options_t* opts, kf_request_t* req) {
  const int dt = kf::api::raw_enum(dtype_in);
  return guarded(comm, [&]() -> Status {
    KF_ASYNC_PROLOGUE("kf_ibroadcast");
    c.dtype(dt).count(count, dt).root(root);
    if (!c.ok()) return c.status();
    c.buffer(sendbuf, "sendbuf (on root)", count, comm->impl->rank() == root).buffer(recvbuf, "recvbuf", count);
    if (!c.ok()) return c.status();
    return kf::api::submit("kf_ibroadcast", comm,
                           kf::api::spec_of(name, kf::kBroadcast, sendbuf, recvbuf, count, dt, -1, root),
                           opts, req);
  });
}

KF_API kf_status_t kf_ireduce(kf_comm_t comm, const char* name, const void* sendbuf,
                              void* recvbuf, uint64_t count, kf_dtype_t dtype_in, kf_op_t op_in,
                              int root, const kf_op_options_t* opts, kf_request_t* req) {
  const int dt = kf::api::raw_enum(dtype_in);
  const int op = kf::api::raw_enum(op_in);
  return guarded(comm, [&]() -> Status {
    KF_ASYNC_PROLOGUE("kf_ireduce");
    c.dtype(dt).op(op).count(count, dt).root(root);
    if (!c.ok()) return c.status();
    c.buffer(sendbuf, "sendbuf", count).buffer(recvbuf, "recvbuf (on root)", count, comm->impl->rank() == root);
    if (!c.ok()) return c.status();
    return kf::api::submit("kf_ireduce", comm,
                           kf::api::spec_of(name, kf::kReduce, sendbuf, recvbuf, count, dt, op, root),
                           opts, req);
  });
}

// The block kinds: `count` per rank, buffers of size * count on the side
// that holds all blocks.
#define KF_ASYNC_BLOCKS(call, kind, send_n, recv_n, send_needed, recv_needed, OPV, ROOTV)         \
  return guarded(comm, [&]() -> Status {                                                          \
    KF_ASYNC_PROLOGUE(call);                                                                      \
    uint64_t n = static_cast<uint64_t>(comm->impl->size());                                       \
    c.dtype(dt).count(count, dt, n);                                                              \
    if ((OPV) >= 0) c.op(OPV);                                                                    \
    if (kind == kf::kGather || kind == kf::kScatter) c.root(ROOTV);                               \
    if (!c.ok()) return c.status();                                                               \
    c.buffer(sendbuf, "sendbuf", (send_n), (send_needed))                                         \
        .buffer(recvbuf, "recvbuf", (recv_n), (recv_needed));                                     \
    if (!c.ok()) return c.status();                                                               \
    return kf::api::submit(call, comm,                                                            \
                           kf::api::spec_of(name, kind, sendbuf, recvbuf, count, dt, OPV, ROOTV), \
                           opts, req);                                                            \
  })

KF_API kf_status_t kf_iall_gather(kf_comm_t comm, const char* name, const void* sendbuf,
                                  void* recvbuf, uint64_t count, kf_dtype_t dtype_in,
                                  const kf_op_options_t* opts, kf_request_t* req) {
  const int dt = kf::api::raw_enum(dtype_in);
  KF_ASYNC_BLOCKS("kf_iall_gather", kf::kAllGather, count, count, true, true, -1, -1);
}

KF_API kf_status_t kf_ireduce_scatter(kf_comm_t comm, const char* name, const void* sendbuf,
                                      void* recvbuf, uint64_t count, kf_dtype_t dtype_in,
                                      kf_op_t op_in, const kf_op_options_t* opts,
                                      kf_request_t* req) {
  const int dt = kf::api::raw_enum(dtype_in);
  const int op = kf::api::raw_enum(op_in);
  KF_ASYNC_BLOCKS("kf_ireduce_scatter", kf::kReduceScatter, count, count, true, true, op, -1);
}

KF_API kf_status_t kf_iall_to_all(kf_comm_t comm, const char* name, const void* sendbuf,
                                  void* recvbuf, uint64_t count, kf_dtype_t dtype_in,
                                  const kf_op_options_t* opts, kf_request_t* req) {
  const int dt = kf::api::raw_enum(dtype_in);
  KF_ASYNC_BLOCKS("kf_iall_to_all", kf::kAllToAll, count, count, true, true, -1, -1);
}

KF_API kf_status_t kf_igather(kf_comm_t comm, const char* name, const void* sendbuf,
                              void* recvbuf, uint64_t count, kf_dtype_t dtype_in, int root,
                              const kf_op_options_t* opts, kf_request_t* req) {
  const int dt = kf::api::raw_enum(dtype_in);
  KF_ASYNC_BLOCKS("kf_igather", kf::kGather, count, count, true, comm->impl->rank() == root, -1, root);
}

KF_API kf_status_t kf_iscatter(kf_comm_t comm, const char* name, const void* sendbuf,
                               void* recvbuf, uint64_t count, kf_dtype_t dtype_in, int root,
                               const kf_op_options_t* opts, kf_request_t* req) {
  const int dt = kf::api::raw_enum(dtype_in);
  KF_ASYNC_BLOCKS("kf_iscatter", kf::kScatter, count, count, comm->impl->rank() == root, true, -1, root);
}

KF_API kf_status_t kf_ibarrier(kf_comm_t comm, const char* name, const kf_op_options_t* opts,
                               kf_request_t* req) {
  return guarded(comm, [&]() -> Status {
    KF_ASYNC_PROLOGUE("kf_ibarrier");
    return kf::api::submit("kf_ibarrier", comm,
                           kf::api::spec_of(name, kf::kBarrier, nullptr, nullptr, 0, KF_INT8, -1, -1),
                           opts, req);
  });
}

KF_API kf_status_t kf_request_test(kf_request_t req) {
  return kf::api::no_throw([&] {
    if (!kf::api::request_live(req)) return KF_ERR_INVALID_ARGUMENT;
    if (req->state->done()) {
      req->state->flush_held();
    } else {
      req->engine->poll(req->state);  // at most one partition every rank submitted
      if (!req->state->done()) return KF_IN_PROGRESS;
    }
    return req->state->status().code();
  });
}

KF_API kf_status_t kf_request_wait(kf_request_t req) {
  return kf::api::no_throw([&] {
    if (!kf::api::request_live(req)) return KF_ERR_INVALID_ARGUMENT;
    if (kf::in_completion_callback() && !req->state->done()) {
      return kf::api::refuse_wait_in_callback("kf_request_wait", req);
    }
    return kf::api::wait_one(req);
  });
}

KF_API kf_status_t kf_request_wait_any(size_t n, const kf_request_t* reqs, size_t* index) {
  return kf::api::no_throw([&] {
    if (reqs == nullptr || index == nullptr || n == 0) return KF_ERR_INVALID_ARGUMENT;
    kf_request_t first = nullptr;
    for (size_t i = 0; i < n; ++i) {
      if (reqs[i] == nullptr) continue;
      if (!kf::api::request_live(reqs[i])) return KF_ERR_INVALID_ARGUMENT;
      if (first == nullptr) first = reqs[i];
    }
    if (first == nullptr) return KF_ERR_INVALID_ARGUMENT;
    kf::AnyCompletion watch;
    for (;;) {
      const uint64_t seen = kf::AnyCompletion::count();
      for (size_t i = 0; i < n; ++i) {
        if (reqs[i] != nullptr && reqs[i]->state->done()) {
          *index = i;
          return kf::api::wait_one(reqs[i]);
        }
      }
      // None complete: inside a callback it may not wait.
      if (kf::in_completion_callback()) {
        return kf::api::refuse_wait_in_callback("kf_request_wait_any", first);
      }
      // Run a partition of any of them here, or sleep until a request
      // completes (any request of the process; bounded, so that work
      // handed out meanwhile is looked for again).
      bool helped = false;
      for (size_t i = 0; i < n && !helped; ++i) {
        if (reqs[i] != nullptr) helped = reqs[i]->engine->help(reqs[i]->state);
      }
      if (!helped) watch.sleep(seen, kf::api::kWaitAnyLookUs);
    }
  });
}

KF_API kf_status_t kf_request_wait_all(size_t n, const kf_request_t* reqs) {
  return kf::api::no_throw([&] {
    if (reqs == nullptr && n > 0) return KF_ERR_INVALID_ARGUMENT;
    for (size_t i = 0; i < n; ++i) {
      if (reqs[i] != nullptr && !kf::api::request_live(reqs[i])) return KF_ERR_INVALID_ARGUMENT;
    }
    if (kf::in_completion_callback()) {
      for (size_t i = 0; i < n; ++i) {
        if (reqs[i] != nullptr && !reqs[i]->state->done()) {
          return kf::api::refuse_wait_in_callback("kf_request_wait_all", reqs[i]);
        }
      }
    }
    // While it waits for one, the thread runs the partitions of the others
    // that come its way, instead of handing them to another thread. (Their
    // states on the stack for a burst of up to kOnStack: a heap block per
    // call is malloc's and free's code, which a step's data has flushed.)
    constexpr size_t kOnStack = 64;
    const kf::AsyncRequest* on_stack[kOnStack];
    std::vector<const kf::AsyncRequest*> on_heap;
    const kf::AsyncRequest** states = on_stack;
    if (n > kOnStack) {
      on_heap.resize(n);
      states = on_heap.data();
    }
    for (size_t i = 0; i < n; ++i) states[i] = reqs[i] != nullptr ? reqs[i]->state.get() : nullptr;
    // The last request first: requests are usually listed in submission
    // order and, at equal priority, usually complete in it, so the thread
    // sleeps through the completions of the others (woken only when handed
    // one of their partitions) instead of waking at each to wait for the
    // next. Held frames of requests complete already leave first (another
    // communicator's peers may wait for them). Then every request in array
    // order, as before: the status and the errors recorded on the
    // communicators come in that order.
    size_t last = n;
    while (last > 0 && reqs[last - 1] == nullptr) --last;
    if (last > 0 && !reqs[last - 1]->state->done()) {
      for (size_t i = 0; i + 1 < last; ++i) {
        if (reqs[i] != nullptr && reqs[i]->state->done()) reqs[i]->state->flush_held();
      }
      reqs[last - 1]->engine->wait(reqs[last - 1]->state, kf::WaitRest{states, last - 1});
    }
    kf_status_t first = KF_SUCCESS;
    for (size_t i = 0; i < last; ++i) {
      if (reqs[i] == nullptr) continue;
      const kf::WaitRest rest{states + i + 1, n - i - 1};
      kf_status_t st = kf::api::wait_one(reqs[i], rest);
      if (first == KF_SUCCESS) first = st;
    }
    for (size_t i = 0; i < last; ++i) {
      if (reqs[i] != nullptr) kf::api::RequestTable::get().prefetch_free(reqs[i]);
    }
    return first;
  });
}

KF_API const char* kf_request_error(kf_request_t req) {
  try {
    if (!kf::api::request_live(req) || !req->state->done()) return "";
    return req->state->message().c_str();
  } catch (...) {
    return "";
  }
}

KF_API kf_status_t kf_request_free(kf_request_t req) {
  if (req == nullptr) return KF_SUCCESS;
  return kf::api::no_throw([&] { return kf::api::RequestTable::get().free(req); });
}

}  // extern "C"
