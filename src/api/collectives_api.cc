// Blocking collective entry points: check arguments, then run the operation.
// A zero-length collective still runs on the engine (as a zero-length named
// operation): skipping it here would leave this rank's per-name sequence one
// behind a rank that called it with a nonzero count, so the mismatch would
// show as a hang instead of an error.
#include "api/guard.h"
#include "api/validate.h"
#include "kungfu/kungfu.h"

using kf::Status;
using kf::api::Check;
using kf::api::guarded;

extern "C" {

KF_API kf_status_t kf_all_reduce(kf_comm_t comm, const void* sendbuf, void* recvbuf,
                                 uint64_t count, kf_dtype_t dtype_in, kf_op_t op_in) {
  const int dtype_raw = kf::api::raw_enum(dtype_in);
  const int op_raw = kf::api::raw_enum(op_in);
  return guarded(comm, [&]() -> Status {
    Check c("kf_all_reduce", comm);
    c.comm().dtype(dtype_raw).op(op_raw).count(count, dtype_raw).buffer(sendbuf, "sendbuf", count).buffer(recvbuf, "recvbuf", count);
    if (!c.ok()) return c.status();
    return comm->impl->all_reduce(sendbuf, recvbuf, count, kf_dtype_t(dtype_raw), kf_op_t(op_raw));
  });
}

KF_API kf_status_t kf_broadcast(kf_comm_t comm, const void* sendbuf, void* recvbuf,
                                uint64_t count, kf_dtype_t dtype_in, int root) {
  const int dtype_raw = kf::api::raw_enum(dtype_in);
  return guarded(comm, [&]() -> Status {
    Check c("kf_broadcast", comm);
    c.comm().dtype(dtype_raw).count(count, dtype_raw).root(root);
    if (!c.ok()) return c.status();
    c.buffer(sendbuf, "sendbuf (on root)", count, comm->impl->rank() == root).buffer(recvbuf, "recvbuf", count);
    if (!c.ok()) return c.status();
    return comm->impl->broadcast(sendbuf, recvbuf, count, kf_dtype_t(dtype_raw), root);
  });
}

KF_API kf_status_t kf_reduce(kf_comm_t comm, const void* sendbuf, void* recvbuf, uint64_t count,
                             kf_dtype_t dtype_in, kf_op_t op_in, int root) {
  const int dtype_raw = kf::api::raw_enum(dtype_in);
  const int op_raw = kf::api::raw_enum(op_in);
  return guarded(comm, [&]() -> Status {
    Check c("kf_reduce", comm);
    c.comm().dtype(dtype_raw).op(op_raw).count(count, dtype_raw).root(root);
    if (!c.ok()) return c.status();
    c.buffer(sendbuf, "sendbuf", count).buffer(recvbuf, "recvbuf (on root)", count, comm->impl->rank() == root);
    if (!c.ok()) return c.status();
    return comm->impl->reduce(sendbuf, recvbuf, count, kf_dtype_t(dtype_raw), kf_op_t(op_raw), root);
  });
}

KF_API kf_status_t kf_all_gather(kf_comm_t comm, const void* sendbuf, void* recvbuf,
                                 uint64_t sendcount, kf_dtype_t dtype_in) {
  const int dtype_raw = kf::api::raw_enum(dtype_in);
  return guarded(comm, [&]() -> Status {
    Check c("kf_all_gather", comm);
    c.comm();
    if (!c.ok()) return c.status();
    uint64_t n = static_cast<uint64_t>(comm->impl->size());
    c.dtype(dtype_raw).count(sendcount, dtype_raw, n).buffer(sendbuf, "sendbuf", sendcount).buffer(recvbuf, "recvbuf", sendcount);
    if (!c.ok()) return c.status();
    return comm->impl->all_gather(sendbuf, recvbuf, sendcount, kf_dtype_t(dtype_raw));
  });
}

KF_API kf_status_t kf_reduce_scatter(kf_comm_t comm, const void* sendbuf, void* recvbuf,
                                     uint64_t recvcount, kf_dtype_t dtype_in, kf_op_t op_in) {
  const int dtype_raw = kf::api::raw_enum(dtype_in);
  const int op_raw = kf::api::raw_enum(op_in);
  return guarded(comm, [&]() -> Status {
    Check c("kf_reduce_scatter", comm);
    c.comm();
    if (!c.ok()) return c.status();
    uint64_t n = static_cast<uint64_t>(comm->impl->size());
    c.dtype(dtype_raw).op(op_raw).count(recvcount, dtype_raw, n).buffer(sendbuf, "sendbuf", recvcount).buffer(recvbuf, "recvbuf", recvcount);
    if (!c.ok()) return c.status();
    return comm->impl->reduce_scatter(sendbuf, recvbuf, recvcount, kf_dtype_t(dtype_raw), kf_op_t(op_raw));
  });
}

KF_API kf_status_t kf_all_to_all(kf_comm_t comm, const void* sendbuf, void* recvbuf,
                                 uint64_t count, kf_dtype_t dtype_in) {
  const int dtype_raw = kf::api::raw_enum(dtype_in);
  return guarded(comm, [&]() -> Status {
    Check c("kf_all_to_all", comm);
    c.comm();
    if (!c.ok()) return c.status();
    uint64_t n = static_cast<uint64_t>(comm->impl->size());
    c.dtype(dtype_raw).count(count, dtype_raw, n).buffer(sendbuf, "sendbuf", count).buffer(recvbuf, "recvbuf", count);
    if (!c.ok()) return c.status();
    return comm->impl->all_to_all(sendbuf, recvbuf, count, kf_dtype_t(dtype_raw));
  });
}

KF_API kf_status_t kf_gather(kf_comm_t comm, const void* sendbuf, void* recvbuf,
                             uint64_t sendcount, kf_dtype_t dtype_in, int root) {
  const int dtype_raw = kf::api::raw_enum(dtype_in);
  return guarded(comm, [&]() -> Status {
    Check c("kf_gather", comm);
    c.comm();
    if (!c.ok()) return c.status();
    uint64_t n = static_cast<uint64_t>(comm->impl->size());
    c.dtype(dtype_raw).count(sendcount, dtype_raw, n).root(root);
    if (!c.ok()) return c.status();
    c.buffer(sendbuf, "sendbuf", sendcount).buffer(recvbuf, "recvbuf (on root)", sendcount, comm->impl->rank() == root);
    if (!c.ok()) return c.status();
    return comm->impl->gather(sendbuf, recvbuf, sendcount, kf_dtype_t(dtype_raw), root);
  });
}

KF_API kf_status_t kf_scatter(kf_comm_t comm, const void* sendbuf, void* recvbuf,
                              uint64_t recvcount, kf_dtype_t dtype_in, int root) {
  const int dtype_raw = kf::api::raw_enum(dtype_in);
  return guarded(comm, [&]() -> Status {
    Check c("kf_scatter", comm);
    c.comm();
    if (!c.ok()) return c.status();
    uint64_t n = static_cast<uint64_t>(comm->impl->size());
    c.dtype(dtype_raw).count(recvcount, dtype_raw, n).root(root);
    if (!c.ok()) return c.status();
    c.buffer(sendbuf, "sendbuf (on root)", recvcount, comm->impl->rank() == root).buffer(recvbuf, "recvbuf", recvcount);
    if (!c.ok()) return c.status();
    return comm->impl->scatter(sendbuf, recvbuf, recvcount, kf_dtype_t(dtype_raw), root);
  });
}

KF_API kf_status_t kf_barrier(kf_comm_t comm) {
  return guarded(comm, [&]() -> Status {
    Check c("kf_barrier", comm);
    KF_RETURN_IF_ERROR(c.comm().status());
    return comm->impl->barrier();
  });
}

KF_API kf_status_t kf_send(kf_comm_t comm, const void* buf, uint64_t count, kf_dtype_t dtype_in,
                           int peer) {
  const int dtype_raw = kf::api::raw_enum(dtype_in);
  return guarded(comm, [&]() -> Status {
    Check c("kf_send", comm);
    c.comm().dtype(dtype_raw).count(count, dtype_raw);
    if (!c.ok()) return c.status();
    c.peer(peer).buffer(buf, "buf", count);
    if (!c.ok()) return c.status();
    return comm->impl->send(buf, count, kf_dtype_t(dtype_raw), peer);
  });
}

KF_API kf_status_t kf_recv(kf_comm_t comm, void* buf, uint64_t count, kf_dtype_t dtype_in,
                           int peer) {
  const int dtype_raw = kf::api::raw_enum(dtype_in);
  return guarded(comm, [&]() -> Status {
    Check c("kf_recv", comm);
    c.comm().dtype(dtype_raw).count(count, dtype_raw);
    if (!c.ok()) return c.status();
    c.peer(peer).buffer(buf, "buf", count);
    if (!c.ok()) return c.status();
    return comm->impl->recv(buf, count, kf_dtype_t(dtype_raw), peer);
  });
}

}  // extern "C"
