// The submission path of the async entry points (async_api.cc), for entry
// points defined elsewhere that submit operations with their own body (the
// sparse all_reduce in sparse_allreduce_api.cc).
#pragma once

#include "api/handle.h"
#include "base/status.h"
#include "kungfu/async.h"
#include "sched/async_engine.h"

namespace kf {
namespace api {

// A valid user operation name: non-empty, at most KF_OP_NAME_MAX bytes, not
// starting with the reserved "kf.".
Status check_async_name(const char* call, const char* name);

// Reads `opts` (priority, callback; partition_bytes unless spec has a body),
// applies the communicator's strategy, submits, and on success sets *req (if
// not NULL) to a new request handle.
Status submit_async(const char* call, kf_comm* comm, AsyncOpSpec spec, const kf_op_options_t* opts,
                    kf_request_t* req);

}  // namespace api
}  // namespace kf
