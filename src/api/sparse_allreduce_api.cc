// Entry points of kungfu/sparse_allreduce.h and kungfu/pto.h: argument
// checks, options, then src/sparse.
#include <cstddef>
#include <limits>
#include <string>

#include "api/async_submit.h"
#include "api/guard.h"
#include "api/validate.h"
#include "base/config.h"
#include "kungfu/kungfu.h"
#include "sparse/sparse_ops.h"

using kf::Status;
using kf::api::Check;
using kf::api::guarded;

namespace kf {
namespace api {
namespace {

// Reads only the fields the caller's size covers.
Status read_sparse_options(const kf_sparse_options_t* o, SparseRequest* r) {
  if (o == nullptr) return Status::ok();
  if (o->size < offsetof(kf_sparse_options_t, algorithm) || o->magic != KF_SPARSE_OPTIONS_MAGIC) {
    return invalid_argument(
        "kf_sparse_all_reduce: options were not initialised with KF_SPARSE_OPTIONS_INITIALIZER");
  }
  auto covers = [o](size_t offset, size_t field) { return o->size >= offset + field; };
  if (covers(offsetof(kf_sparse_options_t, algorithm), sizeof(o->algorithm))) {
    if (o->algorithm < KF_SPARSE_AUTO || o->algorithm > KF_SPARSE_DENSE) {
      return invalid_argument("kf_sparse_all_reduce: options.algorithm " +
                              std::to_string(o->algorithm) + " is not a kf_sparse_algorithm_t");
    }
    r->algorithm = static_cast<SparseAlgorithm>(o->algorithm);
  }
  if (covers(offsetof(kf_sparse_options_t, rounds), sizeof(o->rounds)) && o->rounds != 0) {
    if (o->rounds < 1 || o->rounds > 64) {
      return invalid_argument("kf_sparse_all_reduce: options.rounds " + std::to_string(o->rounds) +
                              " is outside 1..64 (0 = default)");
    }
    r->args.topk.rounds = o->rounds;
  }
  if (covers(offsetof(kf_sparse_options_t, seed), sizeof(o->seed))) r->args.topk.seed = o->seed;
  if (covers(offsetof(kf_sparse_options_t, threads), sizeof(o->threads))) {
    if (o->threads < 0) return invalid_argument("kf_sparse_all_reduce: options.threads must be >= 0");
    r->args.topk.threads = o->threads;
  }
  if (covers(offsetof(kf_sparse_options_t, reserved), sizeof(o->reserved)) && o->reserved != 0) {
    return invalid_argument("kf_sparse_all_reduce: options.reserved must be 0");
  }
  return Status::ok();
}

bool overlaps(const float* a, const float* b, uint64_t n) {
  return a != nullptr && b != nullptr && a < b + n && b < a + n;
}

// The argument checks of both forms, then the request (count 0: nothing
// to do, but the request is still filled so the async form can submit it).
Status sparse_request(const char* call, kf_comm* comm, const float* sendbuf, float* recvbuf,
                      uint64_t count, int op_raw, uint64_t k, float* residual,
                      const kf_sparse_options_t* options, SparseRequest* r) {
  Check c(call, comm);
  c.comm()
      .op(op_raw)
      .count(count, KF_FLOAT32)
      .buffer(sendbuf, "sendbuf", count)
      .buffer(recvbuf, "recvbuf", count);
  if (!c.ok()) return c.status();
  const std::string who(call);
  if (op_raw != KF_SUM && op_raw != KF_AVG) {
    return invalid_argument(who + ": op must be KF_SUM or KF_AVG");
  }
  if (count > std::numeric_limits<uint32_t>::max()) {
    return invalid_argument(who + ": count " + std::to_string(count) +
                            " exceeds 4294967295 (indices are 32-bit)");
  }
  if (count > 0 && (k == 0 || k > count)) {
    return invalid_argument(who + ": k " + std::to_string(k) + " is outside 1..count (" +
                            std::to_string(count) + ")");
  }
  if (overlaps(residual, sendbuf, count) || overlaps(residual, recvbuf, count)) {
    return invalid_argument(who + ": residual overlaps sendbuf or recvbuf");
  }
  KF_RETURN_IF_ERROR(read_sparse_options(options, r));
  r->args.send = sendbuf;
  r->args.recv = recvbuf;
  r->args.count = count;
  r->args.k = k;
  r->args.residual = residual;
  r->args.op = kf_op_t(op_raw);
  const int64_t min_elems = knob_int(Knob::KF_SPARSE_MIN_ELEMS);
  r->min_elems = min_elems > 0 ? static_cast<size_t>(min_elems) : 0;
  return Status::ok();
}

}  // namespace
}  // namespace api
}  // namespace kf

extern "C" {

KF_API kf_status_t kf_sparse_all_reduce(kf_comm_t comm, const float* sendbuf, float* recvbuf,
                                        uint64_t count, kf_op_t op_in, uint64_t k,
                                        float* residual, const kf_sparse_options_t* options) {
  const int op_raw = kf::api::raw_enum(op_in);
  return guarded(comm, [&]() -> Status {
    kf::SparseRequest r;
    KF_RETURN_IF_ERROR(kf::api::sparse_request("kf_sparse_all_reduce", comm, sendbuf, recvbuf,
                                               count, op_raw, k, residual, options, &r));
    if (count == 0) return Status::ok();
    return kf::sparse_all_reduce(*comm->impl, r);
  });
}

KF_API kf_status_t kf_isparse_all_reduce(kf_comm_t comm, const char* name, const float* sendbuf,
                                         float* recvbuf, uint64_t count, kf_op_t op_in, uint64_t k,
                                         float* residual, const kf_sparse_options_t* options,
                                         const kf_op_options_t* opts, kf_request_t* req) {
  const int op_raw = kf::api::raw_enum(op_in);
  return guarded(comm, [&]() -> Status {
    if (req != nullptr) *req = nullptr;
    kf::SparseRequest r;
    KF_RETURN_IF_ERROR(kf::api::sparse_request("kf_isparse_all_reduce", comm, sendbuf, recvbuf,
                                               count, op_raw, k, residual, options, &r));
    KF_RETURN_IF_ERROR(kf::api::check_async_name("kf_isparse_all_reduce", name));
    kf::AsyncOpSpec spec;
    spec.name = name;
    kf::sparse_async_spec(*comm->impl, r, &spec);
    return kf::api::submit_async("kf_isparse_all_reduce", comm, std::move(spec), opts, req);
  });
}

KF_API kf_status_t kf_pto(kf_comm_t comm, void* buf, uint64_t count, kf_dtype_t dtype_in,
                          kf_op_t op_in, kf_pto_fn fn, void* user_data) {
  const int dtype_raw = kf::api::raw_enum(dtype_in);
  const int op_raw = kf::api::raw_enum(op_in);
  return guarded(comm, [&]() -> Status {
    Check c("kf_pto", comm);
    c.comm().dtype(dtype_raw).op(op_raw).count(count, dtype_raw).buffer(buf, "buf", count);
    if (!c.ok()) return c.status();
    if (fn == nullptr) return kf::invalid_argument("kf_pto: fn is NULL");
    // A count of 0 still calls fn (with an empty shard) on every rank, so a
    // caller's per-step bookkeeping runs the same on all ranks; no data moves.
    return kf::pto(*comm->impl, buf, count, kf_dtype_t(dtype_raw), kf_op_t(op_raw),
                   [&](void* shard, size_t n, size_t offset) {
                     return fn(shard, n, offset, user_data);
                   });
  });
}

}  // extern "C"
