#include "sparse/topk_common.h"

#include <string>
#include <thread>

#include "sparse/topk_search.h"

namespace kf {
namespace topk {

Status check_args(const char* who, const float* x, size_t d, size_t k, const float* values,
                  const uint32_t* indices) {
  const std::string w(who);
  if (static_cast<uint64_t>(d) >= (uint64_t{1} << 32)) {
    return invalid_argument(w + ": d = " + std::to_string(d) +
                            " does not fit uint32 indices (d must be below 2^32)");
  }
  if (d > 0 && x == nullptr) return invalid_argument(w + ": x is NULL but d > 0");
  if (d > 0 && k > 0) {
    if (values == nullptr) return invalid_argument(w + ": values is NULL but k > 0");
    if (indices == nullptr) return invalid_argument(w + ": indices is NULL but k > 0");
  }
  return Status::ok();
}

Status non_finite_error(const char* who, const float* x, size_t d) {
  for (size_t i = 0; i < d; ++i) {
    if (key_of(x[i]) >= kInfKey) {
      const bool nan = key_of(x[i]) > kInfKey;
      return invalid_argument(std::string(who) + ": x[" + std::to_string(i) + "] is " +
                              (nan ? "NaN" : "Inf") + "; top-k needs finite values");
    }
  }
  return internal_error(std::string(who) + ": no NaN or Inf found after the pass reported one");
}

void copy_all(const float* x, size_t d, float* values, uint32_t* indices) {
  for (size_t i = 0; i < d; ++i) {
    values[i] = x[i];
    indices[i] = static_cast<uint32_t>(i);
  }
}

int thread_count(int requested, size_t blocks) {
  size_t t = static_cast<size_t>(requested);
  if (requested <= 0) {
    const unsigned hw = std::thread::hardware_concurrency();
    t = hw == 0 ? 1 : hw;
    // Below about four blocks (256 Ki elements) a thread costs more than it saves.
    const size_t useful = blocks / 4 == 0 ? 1 : blocks / 4;
    t = t < useful ? t : useful;
  }
  if (t > blocks) t = blocks;
  return t == 0 ? 1 : static_cast<int>(t);
}

}  // namespace topk
}  // namespace kf
