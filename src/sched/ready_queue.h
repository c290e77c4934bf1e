// ReadyQueue: operations ready to run, in scheduling order: the lower
// priority value first, then the earlier submission order (keys are
// unique: no two operations share an order).
//
// A vector kept sorted from the least urgent to the most, so that the most
// urgent, which usually leaves first, leaves from the back. Once the vector
// has grown, inserting and erasing allocate nothing: a binary search and
// one memmove of the items more urgent than the one inserted or erased (at
// equal priorities a new item is the least urgent, so all of them: 24
// bytes each, a few KiB for hundreds of operations) rather than a tree's
// allocation and rebalancing. This runs once per operation, right after a
// pass whose data has pushed the lane's code and data out of the CPU's
// caches.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace kf {

template <typename T>
class ReadyQueue {
 public:
  struct Item {
    int32_t priority;
    uint64_t order;
    T* op;
  };
  using const_iterator = typename std::vector<Item>::const_reverse_iterator;

  bool empty() const { return items_.empty(); }
  size_t size() const { return items_.size(); }
  // From the most urgent to the least.
  const_iterator begin() const { return items_.rbegin(); }
  const_iterator end() const { return items_.rend(); }

  void insert(int32_t priority, uint64_t order, T* op) {
    items_.insert(position(priority, order), Item{priority, order, op});
  }
  // Removes the item with this key; false if there is none.
  bool erase(int32_t priority, uint64_t order) {
    auto it = position(priority, order);
    if (it == items_.end() || it->priority != priority || it->order != order) return false;
    items_.erase(it);
    return true;
  }

 private:
  // The first item at least as urgent as the key (the vector runs from the
  // least urgent to the most).
  typename std::vector<Item>::iterator position(int32_t priority, uint64_t order) {
    return std::lower_bound(items_.begin(), items_.end(), Item{priority, order, nullptr},
                            [](const Item& a, const Item& b) {
                              return a.priority != b.priority ? a.priority > b.priority
                                                              : a.order > b.order;
                            });
  }

  std::vector<Item> items_;
};

}  // namespace kf
