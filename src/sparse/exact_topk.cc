// Exact top-k by |x|, the reference MSTopK is measured against: the keys of
// |x| are copied, std::nth_element finds the k-th largest (introselect, linear
// on average; not a sort), and one pass in index order writes every element
// above it and the lowest-indexed ties.
#include <algorithm>
#include <functional>
#include <vector>

#include "sparse/topk.h"
#include "sparse/topk_common.h"
#include "sparse/topk_search.h"

namespace kf {

Status exact_topk(const float* x, size_t d, size_t k, float* values, uint32_t* indices) {
  KF_RETURN_IF_ERROR(topk::check_args("exact_topk", x, d, k, values, indices));
  if (d == 0 || k == 0) return Status::ok();

  std::vector<uint32_t> keys(d);
  uint32_t max_key = 0;
  for (size_t i = 0; i < d; ++i) {
    keys[i] = topk::key_of(x[i]);
    max_key = std::max(max_key, keys[i]);
  }
  if (max_key >= topk::kInfKey) return topk::non_finite_error("exact_topk", x, d);
  if (k >= d) {
    topk::copy_all(x, d, values, indices);
    return Status::ok();
  }

  const auto kth = keys.begin() + static_cast<std::ptrdiff_t>(k - 1);
  std::nth_element(keys.begin(), kth, keys.end(), std::greater<uint32_t>());
  const uint32_t kth_key = *kth;
  // Everything above the k-th key sits before it after nth_element.
  const size_t above = static_cast<size_t>(
      std::count_if(keys.begin(), kth, [kth_key](uint32_t key) { return key > kth_key; }));
  size_t ties = k - above;

  size_t pos = 0;
  for (size_t i = 0; i < d && pos < k; ++i) {
    const uint32_t key = topk::key_of(x[i]);
    if (key > kth_key || (key == kth_key && ties > 0)) {
      if (key == kth_key) --ties;
      values[pos] = x[i];
      indices[pos] = static_cast<uint32_t>(i);
      ++pos;
    }
  }
  return Status::ok();
}

}  // namespace kf
