// The baseline MSTopK passes (plain loops the compiler vectorises for the
// build target) and the choice of table.
#include "sparse/topk_kernels.h"

#include "sparse/topk_search.h"

namespace kf {
namespace topk {
namespace {

float abs_of(float v) {
  const uint32_t key = key_of(v);
  float a;
  std::memcpy(&a, &key, sizeof(a));
  return a;
}

void stats_baseline(const float* x, size_t n, double* abs_sum, uint32_t* max_key) {
  float lane[kSumLanes] = {};
  uint32_t m = 0;
  size_t i = 0;
  for (; i + kSumLanes <= n; i += kSumLanes) {
    for (size_t j = 0; j < kSumLanes; ++j) lane[j] += abs_of(x[i + j]);
  }
  for (size_t j = 0; i + j < n; ++j) lane[j] += abs_of(x[i + j]);
  for (i = 0; i < n; ++i) {
    const uint32_t key = key_of(x[i]);
    m = key > m ? key : m;
  }
  double sum = 0.0;
  for (size_t j = 0; j < kSumLanes; ++j) sum += lane[j];
  *abs_sum = sum;
  *max_key = m;
}

uint64_t count_ge_baseline(const float* x, size_t n, uint32_t t) {
  uint64_t count = 0;
  for (size_t i = 0; i < n; ++i) count += key_of(x[i]) >= t ? 1 : 0;
  return count;
}

void select_baseline(const float* src, const uint32_t* idx, size_t base, size_t n, uint32_t t1,
                     uint32_t t2, uint64_t band_ordinal, uint64_t win_lo, uint64_t win_hi,
                     float* out_values, uint32_t* out_indices, size_t pos) {
  for (size_t i = 0; i < n; ++i) {
    const uint32_t key = key_of(src[i]);
    if (key < t2) continue;
    select_one(src, idx, base, i, key, t1, &band_ordinal, win_lo, win_hi, out_values, out_indices,
               &pos);
  }
}

size_t compact_baseline(const float* x, size_t n, uint32_t t, size_t base, float* out_values,
                        uint32_t* out_indices, size_t /*room*/) {
  return compact_from(x, 0, n, t, base, out_values, out_indices, 0);
}

}  // namespace

namespace detail {
const TopkKernels& baseline_topk_kernels() {
  static const TopkKernels table{stats_baseline, count_ge_baseline, select_baseline,
                                 compact_baseline};
  return table;
}
}  // namespace detail

const TopkKernels& topk_kernels(KernelIsa isa) {
  if (isa == KernelIsa::kAvx2 && kernel_isa_supported(isa) &&
      detail::avx2_topk_kernels() != nullptr) {
    return *detail::avx2_topk_kernels();
  }
  return detail::baseline_topk_kernels();
}

const TopkKernels& topk_kernels() {
  return topk_kernels(active_kernels().isa);
}

}  // namespace topk
}  // namespace kf
