// Argument checks shared by the collective entry points. Each returns
// KF_ERR_INVALID_ARGUMENT with a sentence naming the call and the parameter.
#pragma once

#include <cstdint>

#include "base/status.h"
#include "kungfu/types.h"

struct kf_comm;

namespace kf {
namespace api {

class Check {
 public:
  Check(const char* call, kf_comm* comm) : call_(call), comm_(comm) {}

  // The communicator is live; must come first.
  Check& comm();
  Check& dtype(kf_dtype_t dt);
  Check& op(kf_op_t op);
  // count * blocks elements of dtype fit in memory (no overflow).
  Check& count(uint64_t count, kf_dtype_t dt, uint64_t blocks = 1);
  Check& root(int root);
  Check& peer(int peer);
  // buf is not NULL when `needed` and count > 0.
  Check& buffer(const void* buf, const char* name, uint64_t count, bool needed = true);

  const Status& status() const { return status_; }

 private:
  Check& fail(const std::string& what);

  const char* call_;
  kf_comm* comm_;
  Status status_;
};

}  // namespace api
}  // namespace kf
