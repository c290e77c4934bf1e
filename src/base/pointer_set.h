// PointerSet: a set of pointers whose lookups, insertions and erasures take
// no lock (in the common case).
//
// For the handles every API call validates (a communicator's, on each
// submission; a request's, made and freed once per operation): a mutex
// there costs two atomic instructions per call and makes every thread of
// the process meet on one cache line. The set is an open-addressed table
// of atomic slots:
//  - an insertion takes the first free slot (empty, or a tombstone) within
//    kProbe slots of the pointer's home, by compare-and-swap;
//  - an erasure marks the member's slot as claimed (its low bit, free in an
//    object's address), runs the caller's check, then leaves a tombstone
//    (or restores the member if the check refused);
//  - a lookup reads at most kProbe slots from the home, and stops at an
//    empty one: a slot, once used, never becomes empty again, so no member
//    lies beyond an empty slot of its path.
// A pointer that finds no free slot within kProbe goes to an overflow set
// under the set's mutex (lookups that miss the table read it only while it
// is not empty). Bounded probes keep every lookup, of a member or not, to
// at most kProbe slots, however many tombstones the table holds.
//
// A lookup racing an insertion or erasure of the same pointer sees either
// side (a member being erased is still one until its tombstone is laid);
// the caller's own ordering (a handle is used after it was made) does the
// rest.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>
#include <unordered_set>

#include "base/cpu_relax.h"

namespace kf {

// `Slots`: a power of two. T's alignment must be at least 2 (the claim
// bit).
template <typename T, size_t Slots = 1024>
class PointerSet {
 public:
  static constexpr size_t kSlots = Slots;
  static constexpr size_t kProbe = kSlots < 64 ? kSlots : 64;
  static_assert(kSlots >= 2 && (kSlots & (kSlots - 1)) == 0, "a power of two");
  static_assert(alignof(T) >= 2, "the low bit of a member's address marks a claimed slot");

  // Inserts `p` (a valid object's address); false if it is a member
  // already, or null or 1 (never members).
  bool insert(T* p) {
    if (!valid(p)) return false;
    std::lock_guard<std::mutex> lock(mu_);  // (two insertions of one pointer: one finds it)
    if (slot_of(p) != nullptr || overflow_.count(p) != 0) return false;
    if (!place(p)) overflow_locked(p);
    return true;
  }
  // Inserts `p`, which is not a member (memory just allocated for a new
  // object): no search for it first, and no lock unless it overflows.
  void insert_new(T* p) {
    if (!valid(p)) return;
    if (place(p)) return;
    std::lock_guard<std::mutex> lock(mu_);
    overflow_locked(p);
  }

  enum class Erased { kNotMember, kRefused, kYes };
  // Erases `p` if it is a member and `ok(p)`. `ok` runs while this thread
  // holds the member's claim: of two erasures of one member, one finds it
  // gone, and the other waits for the first's verdict. `ok` must not
  // insert or erase `p` itself.
  template <typename Pred>
  Erased erase_if(T* p, Pred ok) {
    if (!valid(p)) return Erased::kNotMember;
    const uintptr_t want = address(p);
    unsigned spins = 0;
    for (std::atomic<uintptr_t>* slot = slot_of(p); slot != nullptr; slot = slot_of(p)) {
      uintptr_t v = want;
      if (slot->compare_exchange_strong(v, want | kClaimBit, std::memory_order_acquire)) {
        struct Verdict {  // lays the tombstone, or gives the member back (also if `ok` throws)
          std::atomic<uintptr_t>* slot;
          uintptr_t value;
          ~Verdict() { slot->store(value, std::memory_order_release); }
        } verdict{slot, want};
        if (!ok(p)) return Erased::kRefused;
        verdict.value = kTomb;
        return Erased::kYes;
      }
      // Claimed by another erasure: look again after its verdict.
      if (++spins % 64 == 0) {
        std::this_thread::yield();  // (its thread may be off the CPU)
      } else {
        cpu_relax();
      }
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (overflow_.count(p) == 0) return Erased::kNotMember;
    if (!ok(p)) return Erased::kRefused;
    overflow_.erase(p);
    overflow_size_.store(overflow_.size(), std::memory_order_release);
    return Erased::kYes;
  }
  // Erases `p`; false if it was not a member.
  bool erase(T* p) {
    return erase_if(p, [](T*) { return true; }) == Erased::kYes;
  }

  // Asks the CPU to fetch, for writing, the slot where `p`'s search starts
  // (before an erasure the caller expects soon). A hint only.
  void prefetch(const T* p) const { __builtin_prefetch(&slots_[home(p)], 1); }

  // Whether `p` is a member (false for null). No lock unless the overflow
  // set is in use.
  bool contains(T* p) const {
    if (!valid(p)) return false;
    if (slot_of(p) != nullptr) return true;
    if (overflow_size_.load(std::memory_order_acquire) == 0) return false;
    std::lock_guard<std::mutex> lock(mu_);
    return overflow_.count(p) != 0;
  }

 private:
  static constexpr uintptr_t kEmpty = 0;
  static constexpr uintptr_t kTomb = 1;  // no object lives at address 1
  static constexpr uintptr_t kClaimBit = 1;

  static uintptr_t address(const T* p) { return reinterpret_cast<uintptr_t>(p); }
  // Whether `p` may be a member: not one of the slot markers.
  static bool valid(const T* p) { return address(p) > kTomb; }
  static size_t home(const T* p) {
    uint64_t h = static_cast<uint64_t>(address(p)) * 0x9e3779b97f4a7c15ull;
    return static_cast<size_t>(h >> 32) & (kSlots - 1);
  }
  // Takes a free slot within kProbe of p's home; false if there is none.
  bool place(T* p) {
    for (size_t i = 0, s = home(p); i < kProbe; ++i, s = (s + 1) & (kSlots - 1)) {
      uintptr_t v = slots_[s].load(std::memory_order_relaxed);
      while (v == kEmpty || v == kTomb) {
        if (slots_[s].compare_exchange_weak(v, address(p), std::memory_order_release,
                                            std::memory_order_relaxed)) {
          return true;
        }
      }
    }
    return false;
  }
  // Puts `p`, which found no free slot, in the overflow set. Caller holds mu_.
  void overflow_locked(T* p) {
    overflow_.insert(p);
    overflow_size_.store(overflow_.size(), std::memory_order_release);
  }
  // The slot holding `p` (claimed or not), or null.
  std::atomic<uintptr_t>* slot_of(const T* p) const {
    const uintptr_t want = address(p);
    for (size_t i = 0, s = home(p); i < kProbe; ++i, s = (s + 1) & (kSlots - 1)) {
      uintptr_t v = slots_[s].load(std::memory_order_acquire);
      if ((v & ~kClaimBit) == want) return &slots_[s];
      if (v == kEmpty) return nullptr;
    }
    return nullptr;
  }

  mutable std::atomic<uintptr_t> slots_[kSlots] = {};
  mutable std::mutex mu_;
  std::unordered_set<T*> overflow_;  // mu_
  std::atomic<size_t> overflow_size_{0};
};

}  // namespace kf
