// Status: the internal result type. A code from the public enum plus a
// sentence of detail; converted to kf_status_t and the last-error text at the
// C boundary (src/api). Never throws.
#pragma once

#include <string>
#include <utility>

#include "kungfu/types.h"

namespace kf {

class Status {
 public:
  Status() = default;
  Status(kf_status_t code, std::string message) : code_(code), message_(std::move(message)) {}
  // Copies skip the string while both messages are empty (an ok status,
  // copied several times per operation: a string copy is a library call).
  Status(const Status& o) : code_(o.code_) {
    if (!o.message_.empty()) message_ = o.message_;
  }
  Status& operator=(const Status& o) {
    code_ = o.code_;
    if (!o.message_.empty() || !message_.empty()) message_ = o.message_;
    return *this;
  }
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

  static Status ok() { return Status(); }

  bool is_ok() const { return code_ == KF_SUCCESS; }
  kf_status_t code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  kf_status_t code_ = KF_SUCCESS;
  std::string message_;
};

inline Status invalid_argument(std::string m) { return Status(KF_ERR_INVALID_ARGUMENT, std::move(m)); }
inline Status invalid_usage(std::string m) { return Status(KF_ERR_INVALID_USAGE, std::move(m)); }
inline Status system_error(std::string m) { return Status(KF_ERR_SYSTEM, std::move(m)); }
inline Status remote_error(std::string m) { return Status(KF_ERR_REMOTE, std::move(m)); }
inline Status timeout_error(std::string m) { return Status(KF_ERR_TIMEOUT, std::move(m)); }
inline Status aborted_error(std::string m) { return Status(KF_ERR_ABORTED, std::move(m)); }
inline Status internal_error(std::string m) { return Status(KF_ERR_INTERNAL, std::move(m)); }
inline Status not_supported(std::string m) { return Status(KF_ERR_NOT_SUPPORTED, std::move(m)); }

// "what: strerror(errno)" for a failed system call.
std::string errno_text(const char* what, int err);

}  // namespace kf

// Returns early from the enclosing function when `expr` is not ok.
#define KF_RETURN_IF_ERROR(expr)            \
  do {                                      \
    ::kf::Status kf_status_tmp_ = (expr);   \
    if (!kf_status_tmp_.is_ok()) return kf_status_tmp_; \
  } while (0)
