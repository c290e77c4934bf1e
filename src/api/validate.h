// Argument checks shared by the collective entry points. Each returns
// KF_ERR_INVALID_ARGUMENT with a sentence naming the call and the parameter.
#pragma once

#include <cstdint>
#include <cstring>

#include "base/status.h"
#include "kungfu/types.h"

struct kf_comm;

namespace kf {
namespace api {

// The bits of an enum parameter as an int, read without an enum-typed load:
// C callers may pass any int, and loading an out-of-range enum is undefined
// behaviour in C++.
template <typename E>
int raw_enum(const E& e) {
  static_assert(sizeof(E) == sizeof(int), "C enums are int-sized");
  int v;
  std::memcpy(&v, &e, sizeof(v));
  return v;
}

class Check {
 public:
  Check(const char* call, kf_comm* comm) : call_(call), comm_(comm) {}

  // The communicator is live; must come first.
  Check& comm();
  Check& dtype(int dt);
  Check& op(int op);
  // count * blocks elements of dtype fit in memory (no overflow).
  Check& count(uint64_t count, int dt, uint64_t blocks = 1);
  Check& root(int root);
  Check& peer(int peer);
  // buf is not NULL when `needed` and count > 0.
  Check& buffer(const void* buf, const char* name, uint64_t count, bool needed = true);

  const Status& status() const { return status_; }
  // Whether every check so far passed (then return status(): it says why).
  bool ok() const { return status_.is_ok(); }

 private:
  Check& fail(const std::string& what);

  const char* call_;
  kf_comm* comm_;
  Status status_;
};

}  // namespace api
}  // namespace kf
