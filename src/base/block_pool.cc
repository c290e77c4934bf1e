#include "base/block_pool.h"

#include <new>

namespace kf {
namespace {

// The free blocks of one size a thread keeps.
struct Shelf {
  size_t bytes = 0;  // 0: unused
  size_t n = 0;
  void* blocks[BlockPool::kThreadKeep];
};

// A thread's shelves: made at its first allocation (deallocate() never
// allocates: destructors reach it), deleted with their blocks when the
// thread ends (Cleanup). A thread that only frees blocks frees them to the
// pools, and so does one whose shelves are gone (`ended`: thread-local
// objects destroyed after Cleanup may still free blocks). Trivial, so that
// reading it costs one thread-local access and no initialisation check.
struct ThreadShelves {
  Shelf* shelves;
  bool ended;
};
thread_local ThreadShelves t_shelves;

struct Cleanup {
  ~Cleanup() {
    ThreadShelves& ts = t_shelves;
    ts.ended = true;
    if (ts.shelves == nullptr) return;
    for (size_t i = 0; i < BlockPool::kThreadSizes; ++i) {
      for (size_t j = 0; j < ts.shelves[i].n; ++j) ::operator delete(ts.shelves[i].blocks[j]);
    }
    delete[] ts.shelves;
    ts.shelves = nullptr;
  }
};

// The calling thread's shelf for `bytes` (with `make`, the shelves are made
// and an unused one taken if need be), or null: nothing kept, the thread is
// ending, or every shelf holds another size.
Shelf* shelf_for(size_t bytes, bool make) {
  if (!kKeepMemory) return nullptr;
  ThreadShelves& ts = t_shelves;
  if (ts.shelves == nullptr) {
    if (!make || ts.ended) return nullptr;
    static thread_local Cleanup cleanup;  // registered here, at the first shelves
    (void)cleanup;
    ts.shelves = new Shelf[BlockPool::kThreadSizes];
  }
  for (size_t i = 0; i < BlockPool::kThreadSizes; ++i) {
    Shelf& s = ts.shelves[i];
    if (s.bytes == bytes) return &s;
    if (s.bytes == 0) {
      if (!make) return nullptr;
      s.bytes = bytes;
      return &s;
    }
  }
  return nullptr;
}

}  // namespace

BlockPool::~BlockPool() {
  for (void* p : free_) ::operator delete(p);
}

void* BlockPool::allocate(size_t bytes) {
  if (Shelf* s = shelf_for(bytes, true); s != nullptr && s->n > 0) return s->blocks[--s->n];
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (bytes_ == 0) bytes_ = bytes;
    if (bytes == bytes_ && !free_.empty()) {
      void* p = free_.back();
      free_.pop_back();
      return p;
    }
  }
  return ::operator new(bytes);
}

void BlockPool::deallocate(void* p, size_t bytes) {
  if (Shelf* s = shelf_for(bytes, false); s != nullptr && s->n < kThreadKeep) {
    s->blocks[s->n++] = p;
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (bytes_ == 0) bytes_ = bytes;  // (a thread's blocks served its first allocations)
    if (bytes == bytes_ && free_.size() < keep_) {
      free_.push_back(p);
      return;
    }
  }
  ::operator delete(p);
}

size_t BlockPool::kept() const {
  std::lock_guard<std::mutex> lock(mu_);
  return free_.size();
}

size_t BlockPool::thread_kept(size_t bytes) {
  Shelf* s = shelf_for(bytes, false);
  return s != nullptr ? s->n : 0;
}

}  // namespace kf
