#include "api/validate.h"

#include <cstddef>
#include <limits>

#include "api/handle.h"
#include "base/dtype.h"

namespace kf {
namespace api {

Check& Check::fail(const std::string& what) {
  if (status_.is_ok()) status_ = invalid_argument(std::string(call_) + ": " + what);
  return *this;
}

Check& Check::comm() {
  if (comm_ == nullptr) return fail("comm is NULL");
  if (!is_live(comm_)) return fail("comm is not a live communicator (destroyed?)");
  return *this;
}

Check& Check::dtype(int dt) {
  if (dt < 0 || dt >= KF_DTYPE_COUNT) return fail("dtype " + std::to_string(dt) + " is not a kf_dtype_t");
  return *this;
}

Check& Check::op(int op) {
  if (op < 0 || op >= KF_OP_COUNT) return fail("op " + std::to_string(op) + " is not a kf_op_t");
  return *this;
}

Check& Check::count(uint64_t count, int dt, uint64_t blocks) {
  if (dt < 0 || dt >= KF_DTYPE_COUNT) return *this;
  size_t esize = dtype_size(static_cast<kf_dtype_t>(dt));
  if (esize == 0 || !status_.is_ok()) return *this;
  const uint64_t max_bytes = static_cast<uint64_t>(std::numeric_limits<ptrdiff_t>::max());
  if (blocks == 0) blocks = 1;
  if (count > max_bytes / esize / blocks) {
    return fail("count " + std::to_string(count) + " of " + dtype_name(static_cast<kf_dtype_t>(dt)) +
                " overflows the addressable size");
  }
  return *this;
}

Check& Check::root(int root) {
  if (!status_.is_ok()) return *this;
  int size = comm_->impl->size();
  if (root < 0 || root >= size) {
    return fail("root " + std::to_string(root) + " is not a rank in [0, " + std::to_string(size - 1) + "]");
  }
  return *this;
}

Check& Check::peer(int peer) {
  if (!status_.is_ok()) return *this;
  int size = comm_->impl->size();
  if (peer < 0 || peer >= size) {
    return fail("peer " + std::to_string(peer) + " is not a rank in [0, " + std::to_string(size - 1) + "]");
  }
  if (peer == comm_->impl->rank()) return fail("peer " + std::to_string(peer) + " is this rank");
  return *this;
}

Check& Check::buffer(const void* buf, const char* name, uint64_t count, bool needed) {
  if (needed && count > 0 && buf == nullptr) return fail(std::string(name) + " is NULL");
  return *this;
}

}  // namespace api
}  // namespace kf
