// The AVX2 MSTopK passes. As in algo/kernels/avx2.cc, each function carries a
// target attribute instead of the file being built with -mavx2, so no AVX2
// instruction leaks into code that runs on older CPUs; the table is used only
// after kernel_isa_supported(KernelIsa::kAvx2).
//
// Results equal the baseline's bit for bit: the four accumulators hold the 32
// sum lanes of kSumLanes (accumulator q, lane l is lane 8q + l), the tail goes
// to the same lanes in scalar code, and counts and maxima are integers.
#include "sparse/topk_kernels.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#include "sparse/topk_search.h"

#define KF_TOPK_AVX2 __attribute__((target("avx2")))

namespace kf {
namespace topk {
namespace {

static_assert(kSumLanes == 32, "four 8-lane accumulators");

KF_TOPK_AVX2 void stats_avx2(const float* x, size_t n, double* abs_sum, uint32_t* max_key) {
  const __m256i mask = _mm256_set1_epi32(static_cast<int>(kKeyMask));
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                   _mm256_setzero_ps()};
  __m256i vmax = _mm256_setzero_si256();
  size_t i = 0;
  for (; i + kSumLanes <= n; i += kSumLanes) {
    for (int q = 0; q < 4; ++q) {
      const __m256i bits = _mm256_and_si256(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i + 8 * q)), mask);
      acc[q] = _mm256_add_ps(acc[q], _mm256_castsi256_ps(bits));
      vmax = _mm256_max_epu32(vmax, bits);
    }
  }
  float lane[kSumLanes];
  for (int q = 0; q < 4; ++q) _mm256_storeu_ps(lane + 8 * q, acc[q]);
  uint32_t mx[8];
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(mx), vmax);
  uint32_t m = 0;
  for (uint32_t v : mx) m = v > m ? v : m;
  for (size_t j = 0; i + j < n; ++j) {
    const uint32_t key = key_of(x[i + j]);
    float a;
    std::memcpy(&a, &key, sizeof(a));
    lane[j] += a;
    m = key > m ? key : m;
  }
  double sum = 0.0;
  for (size_t j = 0; j < kSumLanes; ++j) sum += lane[j];
  *abs_sum = sum;
  *max_key = m;
}

KF_TOPK_AVX2 uint64_t count_ge_avx2(const float* x, size_t n, uint32_t t) {
  // key >= t  <=>  key > t - 1 as signed 32-bit integers: keys are below 2^31,
  // and t == 0 gives -1, below every key.
  const __m256i mask = _mm256_set1_epi32(static_cast<int>(kKeyMask));
  const __m256i below = _mm256_set1_epi32(static_cast<int>(t) - 1);
  uint64_t count = 0;
  size_t i = 0;
  while (i + 8 <= n) {
    // Lane counters are flushed before they could wrap.
    const size_t end = i + (size_t{1} << 30) < n ? i + (size_t{1} << 30) : n;
    __m256i c0 = _mm256_setzero_si256();
    __m256i c1 = _mm256_setzero_si256();
    for (; i + 16 <= end; i += 16) {
      const __m256i a =
          _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)), mask);
      const __m256i b =
          _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i + 8)), mask);
      c0 = _mm256_sub_epi32(c0, _mm256_cmpgt_epi32(a, below));
      c1 = _mm256_sub_epi32(c1, _mm256_cmpgt_epi32(b, below));
    }
    for (; i + 8 <= end; i += 8) {
      const __m256i a =
          _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)), mask);
      c0 = _mm256_sub_epi32(c0, _mm256_cmpgt_epi32(a, below));
    }
    uint32_t lanes[8];
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(lanes), _mm256_add_epi32(c0, c1));
    for (uint32_t v : lanes) count += v;
  }
  for (; i < n; ++i) count += key_of(x[i]) >= t ? 1 : 0;
  return count;
}

// Eight keys compared at once; only chunks with an element at or above t2
// (few, outside the candidate copy) go through the scalar per-element step,
// in index order as the baseline.
KF_TOPK_AVX2 void select_avx2(const float* src, const uint32_t* idx, size_t base, size_t n,
                              uint32_t t1, uint32_t t2, uint64_t band_ordinal, uint64_t win_lo,
                              uint64_t win_hi, float* out_values, uint32_t* out_indices,
                              size_t pos) {
  const __m256i mask = _mm256_set1_epi32(static_cast<int>(kKeyMask));
  const __m256i below = _mm256_set1_epi32(static_cast<int>(t2) - 1);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i keys =
        _mm256_and_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i)), mask);
    unsigned hits = static_cast<unsigned>(
        _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(keys, below))));
    while (hits != 0) {
      const size_t j = i + static_cast<size_t>(__builtin_ctz(hits));
      hits &= hits - 1;
      select_one(src, idx, base, j, key_of(src[j]), t1, &band_ordinal, win_lo, win_hi, out_values,
                 out_indices, &pos);
    }
  }
  for (; i < n; ++i) {
    const uint32_t key = key_of(src[i]);
    if (key < t2) continue;
    select_one(src, idx, base, i, key, t1, &band_ordinal, win_lo, win_hi, out_values, out_indices,
               &pos);
  }
}

// For each 8-bit mask of hits, the lanes of the hits in order (then zeros):
// the permutation that packs them to the front of a register.
struct PackTable {
  alignas(32) uint32_t lanes[256][8];
  PackTable() {
    for (unsigned m = 0; m < 256; ++m) {
      unsigned n = 0;
      for (unsigned l = 0; l < 8; ++l) {
        if ((m >> l) & 1u) lanes[m][n++] = l;
      }
      while (n < 8) lanes[m][n++] = 0;
    }
  }
};
const PackTable kPack;

// Branch-free left packing: every chunk of eight costs a permutation and two
// full-width stores whatever the pattern, even without hits (a branch on the
// hits, or a loop over them, mispredicts on the random patterns of a
// gradient's tail: measured three times slower; masked stores are slow on
// AMD). The lanes past the hits are overwritten by the next chunk;
// once fewer than eight slots of room are left the scalar loop finishes, so
// nothing lands past `room`.
KF_TOPK_AVX2 size_t compact_avx2(const float* x, size_t n, uint32_t t, size_t base,
                                 float* out_values, uint32_t* out_indices, size_t room) {
  const __m256i mask = _mm256_set1_epi32(static_cast<int>(kKeyMask));
  const __m256i below = _mm256_set1_epi32(static_cast<int>(t) - 1);
  const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  size_t pos = 0;
  size_t i = 0;
  for (; i + 8 <= n && pos + 8 <= room; i += 8) {
    const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    const __m256i hit = _mm256_cmpgt_epi32(_mm256_and_si256(raw, mask), below);
    const unsigned m = static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(hit)));
    const __m256i perm = _mm256_load_si256(reinterpret_cast<const __m256i*>(kPack.lanes[m]));
    const __m256i idx = _mm256_add_epi32(
        _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(base + i))), iota);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out_values + pos),
                        _mm256_permutevar8x32_epi32(raw, perm));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out_indices + pos),
                        _mm256_permutevar8x32_epi32(idx, perm));
    pos += static_cast<size_t>(__builtin_popcount(m));
  }
  return compact_from(x, i, n, t, base, out_values, out_indices, pos);
}

}  // namespace

namespace detail {
const TopkKernels* avx2_topk_kernels() {
  static const TopkKernels table{stats_avx2, count_ge_avx2, select_avx2, compact_avx2};
  return &table;
}
}  // namespace detail

}  // namespace topk
}  // namespace kf

#else  // not x86

namespace kf {
namespace topk {
namespace detail {
const TopkKernels* avx2_topk_kernels() {
  return nullptr;
}
}  // namespace detail
}  // namespace topk
}  // namespace kf

#endif
