// PointerSet: a set of pointers whose lookups take no lock.
//
// For the handles every API call validates (a communicator's, on each
// submission): a mutex there costs two atomic instructions per call and
// makes every submitting thread of the process meet on one cache line.
// Lookups read an open-addressed table of atomic slots; insertions and
// erasures take the set's mutex. An erased slot becomes a tombstone, never
// empty again, so a lookup that meets an empty slot has passed every slot
// its pointer could be in. (After many erasures a lookup of a non-member
// may read every slot, a rejected handle's cost, until the table holds no
// member: then its tombstones are cleared.) Beyond kSlots / 2 members,
// members go to an overflow set under the mutex (lookups that miss the
// table read it only while it is not empty).
//
// A lookup racing an insertion or erasure of the same pointer sees either
// side; the caller's own ordering (a handle is used after it was made)
// does the rest.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_set>

namespace kf {

// `Slots`: a power of two.
template <typename T, size_t Slots = 1024>
class PointerSet {
 public:
  static constexpr size_t kSlots = Slots;
  static_assert(kSlots >= 2 && (kSlots & (kSlots - 1)) == 0, "a power of two");

  // Inserts `p` (a valid object's address); false if it is a member
  // already, or null or 1 (never members).
  bool insert(T* p) {
    if (!valid(p)) return false;
    std::lock_guard<std::mutex> lock(mu_);
    if (find_locked(p)) return false;
    insert_locked(p);
    return true;
  }
  // Inserts `p`, which is not a member (memory just allocated for a new
  // object): no search for it first.
  void insert_new(T* p) {
    if (!valid(p)) return;
    std::lock_guard<std::mutex> lock(mu_);
    insert_locked(p);
  }

  enum class Erased { kNotMember, kRefused, kYes };
  // Erases `p` if it is a member and `ok(p)`, which is called under the
  // set's lock: of two erasures of one member, one finds it gone.
  template <typename Pred>
  Erased erase_if(T* p, Pred ok) {
    if (!valid(p)) return Erased::kNotMember;
    std::lock_guard<std::mutex> lock(mu_);
    std::atomic<uintptr_t>* slot = slot_of(p);
    if (slot == nullptr && overflow_.count(p) == 0) return Erased::kNotMember;
    if (!ok(p)) return Erased::kRefused;
    if (slot == nullptr) {
      overflow_.erase(p);
      overflow_size_.store(overflow_.size(), std::memory_order_release);
      return Erased::kYes;
    }
    slot->store(kTomb, std::memory_order_release);
    --members_;
    ++tombs_;
    if (members_ == 0 && tombs_ >= kSlots / 4) {
      // No member left in the table: its tombstones go, so that lookups of
      // non-members stop early again. (A lookup meanwhile that meets an
      // emptied slot answers false: right, no member is in the table.)
      for (auto& sl : slots_) sl.store(kEmpty, std::memory_order_relaxed);
      tombs_ = 0;
    }
    return Erased::kYes;
  }
  // Erases `p`; false if it was not a member.
  bool erase(T* p) {
    return erase_if(p, [](T*) { return true; }) == Erased::kYes;
  }

  // Whether `p` is a member (false for null). No lock unless the overflow
  // set is in use.
  bool contains(T* p) const {
    if (!valid(p)) return false;
    if (slot_of(p) != nullptr) return true;
    if (overflow_size_.load(std::memory_order_acquire) == 0) return false;
    std::lock_guard<std::mutex> lock(mu_);
    return find_locked(p);
  }

 private:
  static constexpr uintptr_t kEmpty = 0;
  static constexpr uintptr_t kTomb = 1;  // no object lives at address 1

  // Whether `p` may be a member: not one of the slot markers.
  static bool valid(const T* p) { return reinterpret_cast<uintptr_t>(p) > kTomb; }
  static size_t home(const T* p) {
    uint64_t h = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)) * 0x9e3779b97f4a7c15ull;
    return static_cast<size_t>(h >> 32) & (kSlots - 1);
  }
  void insert_locked(T* p) {
    if (members_ < kSlots / 2) {
      for (size_t i = 0, s = home(p); i < kSlots; ++i, s = (s + 1) & (kSlots - 1)) {
        uintptr_t v = slots_[s].load(std::memory_order_relaxed);
        if (v == kEmpty || v == kTomb) {
          if (v == kTomb) --tombs_;
          slots_[s].store(reinterpret_cast<uintptr_t>(p), std::memory_order_release);
          ++members_;
          return;
        }
      }
    }
    overflow_.insert(p);
    overflow_size_.store(overflow_.size(), std::memory_order_release);
  }
  // The slot holding `p`, or null.
  std::atomic<uintptr_t>* slot_of(const T* p) const {
    const uintptr_t want = reinterpret_cast<uintptr_t>(p);
    for (size_t i = 0, s = home(p); i < kSlots; ++i, s = (s + 1) & (kSlots - 1)) {
      uintptr_t v = slots_[s].load(std::memory_order_acquire);
      if (v == want) return &slots_[s];
      if (v == kEmpty) return nullptr;
    }
    return nullptr;
  }
  bool find_locked(T* p) const {
    return valid(p) && (slot_of(p) != nullptr || overflow_.count(p) != 0);
  }

  mutable std::atomic<uintptr_t> slots_[kSlots] = {};
  mutable std::mutex mu_;
  size_t members_ = 0;               // in slots_ (mu_)
  size_t tombs_ = 0;                 // tombstones in slots_ (mu_)
  std::unordered_set<T*> overflow_;  // mu_
  std::atomic<size_t> overflow_size_{0};
};

}  // namespace kf
