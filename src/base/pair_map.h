// PairMap: a hash map from a pair of 64-bit words (an operation's name hash
// and sequence number) to V, open-addressed in one power-of-two array.
//
// Why not std::unordered_map: a lane operation meets its tables about ten
// times (submission, each rank's record, its end). There each lookup costs
// a 64-bit division (the prime bucket count) and a pointer chase to a node,
// and each insertion a node. Here a lookup is a multiply, a mask and a
// short scan of adjacent slots; nothing is allocated while the table does
// not grow.
//
// Erasure shifts the entries after the hole back (no tombstones), so it
// invalidates iterators and pointers into the table, as insertion does
// when the table grows: find again after either. With Recycle, an erased
// entry's value is not destroyed but left in an unused slot, and claim()
// hands such a value to the next key as it is (a Match keeps its record
// storage); without, it is reset to V().
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace kf {

template <typename V, bool Recycle = false>
class PairMap {
 public:
  using Key = std::pair<uint64_t, uint64_t>;
  struct Slot {
    Key first{};
    V second{};
    bool used = false;
  };

  class iterator {
   public:
    iterator(Slot* s, Slot* end) : s_(s), end_(end) { skip(); }
    Slot& operator*() const { return *s_; }
    Slot* operator->() const { return s_; }
    iterator& operator++() {
      ++s_;
      skip();
      return *this;
    }
    bool operator==(const iterator& o) const { return s_ == o.s_; }
    bool operator!=(const iterator& o) const { return s_ != o.s_; }

   private:
    friend class PairMap;
    void skip() {
      while (s_ != end_ && !s_->used) ++s_;
    }
    Slot* s_;
    Slot* end_;
  };

  explicit PairMap(size_t capacity = 64) : slots_(round_up(capacity)) {}

  iterator begin() { return iterator(slots_.data(), slots_.data() + slots_.size()); }
  iterator end() { return iterator(slots_.data() + slots_.size(), slots_.data() + slots_.size()); }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  iterator find(const Key& k) {
    Slot* s = find_slot(k);
    return s != nullptr ? at(s) : end();
  }
  size_t count(const Key& k) const { return find_slot(k) != nullptr ? 1 : 0; }
  // The value of `k`, or null (for const users).
  const V* get(const Key& k) const {
    const Slot* s = find_slot(k);
    return s != nullptr ? &s->second : nullptr;
  }

  // The entry of `k`: found (second: false), or new (true) with, under
  // Recycle, whatever value an erased entry left in its slot (else V()).
  std::pair<iterator, bool> claim(const Key& k) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    const size_t mask = slots_.size() - 1;
    for (size_t i = home(k) & mask;; i = (i + 1) & mask) {
      Slot& s = slots_[i];
      if (!s.used) {
        s.used = true;
        s.first = k;
        ++size_;
        return {at(&s), true};
      }
      if (s.first == k) return {at(&s), false};
    }
  }
  // Inserts (k, v) unless `k` is present (then `v` is left as it was).
  std::pair<iterator, bool> emplace(const Key& k, V v) {
    auto r = claim(k);
    if (r.second) r.first->second = std::move(v);
    return r;
  }

  void erase(iterator it) { erase_slot(it.s_); }
  void clear() {
    for (Slot& s : slots_) s = Slot();
    size_ = 0;
  }
  size_t erase(const Key& k) {
    Slot* s = find_slot(k);
    if (s == nullptr) return 0;
    erase_slot(s);
    return 1;
  }

 private:
  static size_t round_up(size_t n) {
    size_t c = 16;
    while (c < n) c *= 2;
    return c;
  }
  static size_t home(const Key& k) {
    const uint64_t h = (k.first ^ (k.second * 0x9e3779b97f4a7c15ull)) * 0xbf58476d1ce4e5b9ull;
    return static_cast<size_t>(h >> 32);
  }
  iterator at(Slot* s) { return iterator(s, slots_.data() + slots_.size()); }

  const Slot* find_slot(const Key& k) const {
    const size_t mask = slots_.size() - 1;
    for (size_t i = home(k) & mask;; i = (i + 1) & mask) {
      const Slot& s = slots_[i];
      if (!s.used) return nullptr;  // (the table is never full)
      if (s.first == k) return &s;
    }
  }
  Slot* find_slot(const Key& k) {
    return const_cast<Slot*>(static_cast<const PairMap*>(this)->find_slot(k));
  }

  // Backward shift: each later entry of the run that may live in the hole
  // (its home is not between the hole and it) moves into it.
  void erase_slot(Slot* s) {
    const size_t mask = slots_.size() - 1;
    size_t hole = static_cast<size_t>(s - slots_.data());
    for (size_t j = (hole + 1) & mask; slots_[j].used; j = (j + 1) & mask) {
      const size_t h = home(slots_[j].first) & mask;
      // Stays if its home lies cyclically in (hole, j].
      const bool stays = hole < j ? (h > hole && h <= j) : (h > hole || h <= j);
      if (stays) continue;
      slots_[hole].first = slots_[j].first;
      if (Recycle) {
        std::swap(slots_[hole].second, slots_[j].second);
      } else {
        slots_[hole].second = std::move(slots_[j].second);
      }
      hole = j;
    }
    slots_[hole].used = false;
    if (!Recycle) slots_[hole].second = V();
    --size_;
  }

  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    const size_t mask = slots_.size() - 1;
    for (Slot& o : old) {
      if (!o.used) continue;
      size_t i = home(o.first) & mask;
      while (slots_[i].used) i = (i + 1) & mask;
      slots_[i].used = true;
      slots_[i].first = o.first;
      slots_[i].second = std::move(o.second);
    }
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
};

}  // namespace kf
