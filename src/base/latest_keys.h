// Bounded memory of keys: tables that remember what failed (so that its late
// messages or records are dropped) keep only the latest N keys.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>

namespace kf {

// Hash of a (name hash, sequence number) pair, the key of a named operation.
struct U64PairHash {
  size_t operator()(const std::pair<uint64_t, uint64_t>& k) const {
    return static_cast<size_t>(k.first ^ (k.second * 0x9e3779b97f4a7c15ull));
  }
};

// `key` was just added to `table` (a set or map of keys): it is remembered
// in `order`, and the oldest key leaves both once there are more than
// `limit`.
template <typename Table, typename Key>
void keep_latest(Table* table, std::deque<Key>* order, const Key& key, size_t limit) {
  order->push_back(key);
  if (order->size() > limit) {
    table->erase(order->front());
    order->pop_front();
  }
}

}  // namespace kf
