// Reads a caller's kf_config_t into CommOptions, shared by every entry point
// that makes a communicator.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "kungfu/types.h"
#include "sched/communicator.h"

namespace kf {
namespace api {

// Reads only the fields the caller's size covers. An unset timeout (or a
// NULL config) gives `default_timeout_ms`; an unset name leaves out->name.
Status read_config(const kf_config_t* config, int64_t default_timeout_ms, CommOptions* out);

}  // namespace api
}  // namespace kf
