// The threshold search of MSTopK as a small state machine, apart from the
// passes that count: the CPU operator (mstopk.cc) and the CUDA launcher
// (cuda/mstopk.cu) drive the same search, so both pick the same elements.
//
// Thresholds are keys: the bit pattern of |v| read as an unsigned integer,
// which orders finite magnitudes exactly as the floats do. The paper bisects
// the value interval [mean, max] linearly; bisecting the keys of that interval
// instead halves it in a scale-free way (roughly in log space), so a single
// huge outlier cannot leave every probe above the k-th magnitude, and after
// about 32 rounds the bracket is exact. Header-only, no dependencies, so that
// nvcc can compile it for the CUDA host launcher.
#pragma once

#include <cstdint>
#include <cstring>

namespace kf {
namespace topk {

constexpr uint32_t kKeyMask = 0x7fffffffu;  // clears the sign bit
constexpr uint32_t kInfKey = 0x7f800000u;   // keys at or above this are Inf or NaN

inline uint32_t key_of(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  return bits & kKeyMask;
}

// What the search has established: count(key >= t1) == k1 <= k and
// count(key >= t2) == k2 > k (t2 < t1). Every element with key >= t1 is taken;
// the other k - k1 come from the band t2 <= key < t1 (k2 - k1 elements).
struct Bracket {
  uint32_t t1;
  uint64_t k1;
  uint32_t t2;
  uint64_t k2;
};

// Usage: while (s.next(&t)) s.report(t, count(key >= t)); then s.bracket().
// Precondition: 0 < k < d and max_key < kInfKey.
class ThresholdSearch {
 public:
  ThresholdSearch(uint64_t d, uint64_t k, uint32_t mean_key, uint32_t max_key, int rounds)
      : k_(k), rounds_(rounds), left_(rounds) {
    // Known without counting: nothing is above max, everything is >= 0.
    b_ = Bracket{max_key + 1, 0, 0, d};
    hi_ = b_.t1;
    lo_ = mean_key < max_key ? mean_key : max_key;
    lo_known_ = lo_ == 0;
  }

  // The next threshold to count, or false when the search is over: the upper
  // bound holds exactly k, the bracket cannot narrow, or the rounds are spent.
  bool next(uint32_t* t) {
    for (;;) {
      if (b_.k1 == k_) return false;
      if (lo_known_ && hi_ - lo_ <= 1) return false;
      if (left_ <= 0 || hi_ == lo_) {
        // Phase one never found more than k elements at or above a probe: the
        // k-th magnitude lies below the mean (dense or sparse-valued x).
        // Search [0, t1] with a fresh budget, once.
        if (phase_ == 1 && !lo_known_) {
          phase_ = 2;
          lo_ = 0;
          lo_known_ = true;
          hi_ = b_.t1;
          left_ = rounds_;
          continue;
        }
        return false;
      }
      --left_;
      *t = lo_ + (hi_ - lo_) / 2;  // == lo_ when an unverified lo_ is all that is left
      return true;
    }
  }

  // The count of elements with key >= t, for the t next() returned.
  void report(uint32_t t, uint64_t count) {
    if (count <= k_) {
      hi_ = t;
      b_.t1 = t;
      b_.k1 = count;
    } else {
      lo_ = t;
      lo_known_ = true;
      b_.t2 = t;
      b_.k2 = count;
    }
  }

  const Bracket& bracket() const { return b_; }

 private:
  uint64_t k_;
  int rounds_;
  int left_;
  int phase_ = 1;
  Bracket b_;
  uint32_t lo_, hi_;  // the probes lie in [lo_, hi_); hi_ == b_.t1
  bool lo_known_;     // lo_ was counted (or is 0): lo_ == b_.t2
};

// The first band position of the window: uniform in [0, band - need],
// from the seed alone (splitmix64).
inline uint64_t window_start(uint64_t seed, uint64_t band, uint64_t need) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return z % (band - need + 1);
}

}  // namespace topk
}  // namespace kf
