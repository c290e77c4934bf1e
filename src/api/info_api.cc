// Library information: version, status names, dtype sizes.
#include "api/validate.h"
#include "base/dtype.h"
#include "kungfu/kungfu.h"

extern "C" {

KF_API int kf_get_version(void) { return KF_VERSION_CODE; }

KF_API const char* kf_status_string(kf_status_t status_in) {
  // Switch on the raw int: callers may pass values outside the enum.
  switch (kf::api::raw_enum(status_in)) {
    case KF_SUCCESS: return "KF_SUCCESS: no error";
    case KF_IN_PROGRESS: return "KF_IN_PROGRESS: operation in progress";
    case KF_ERR_INVALID_ARGUMENT: return "KF_ERR_INVALID_ARGUMENT: invalid argument";
    case KF_ERR_INVALID_USAGE: return "KF_ERR_INVALID_USAGE: invalid usage";
    case KF_ERR_SYSTEM: return "KF_ERR_SYSTEM: system call failed";
    case KF_ERR_REMOTE: return "KF_ERR_REMOTE: a peer failed or closed its connection";
    case KF_ERR_TIMEOUT: return "KF_ERR_TIMEOUT: operation timed out";
    case KF_ERR_ABORTED: return "KF_ERR_ABORTED: communicator aborted after an earlier failure";
    case KF_ERR_INTERNAL: return "KF_ERR_INTERNAL: internal error";
    case KF_ERR_NOT_SUPPORTED: return "KF_ERR_NOT_SUPPORTED: not supported";
  }
  return "unknown status";
}

KF_API size_t kf_dtype_size(kf_dtype_t dtype_in) {
  int raw = kf::api::raw_enum(dtype_in);
  return raw < 0 || raw >= KF_DTYPE_COUNT ? 0 : kf::dtype_size(static_cast<kf_dtype_t>(raw));
}

}  // extern "C"
