// BlockPool: keeps the memory of objects made and destroyed once per
// operation (a request, a lane operation) for the next ones, instead of
// returning it to malloc.
//
// Why: a training step makes and destroys a few such objects per tensor,
// dozens of the same size in a burst. malloc keeps only a handful of each
// size in its per-thread cache; the rest go through its general paths,
// whose code and data a step's bulk data has pushed out of the CPU's
// caches by then. A pool's free list is a few lines of code and one
// vector.
//
// One block size per pool (that of the first allocation; others go to
// ::operator new). Thread safe. The pool must outlive every block it gave
// out (a static pointer never deleted, or a member declared before the
// containers of the objects). Use through PoolAllocator with
// std::allocate_shared. Under AddressSanitizer nothing is kept (kKeepMemory),
// so that a use after free is still caught.
#pragma once

#include <cstddef>
#include <mutex>
#include <new>
#include <vector>

namespace kf {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kKeepMemory = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kKeepMemory = false;
#else
constexpr bool kKeepMemory = true;
#endif
#else
constexpr bool kKeepMemory = true;
#endif

class BlockPool {
 public:
  // Keeps at most `keep` free blocks (room for them is reserved here:
  // deallocate(), reached from destructors, never allocates).
  explicit BlockPool(size_t keep) : keep_(kKeepMemory ? keep : 0) { free_.reserve(keep_); }
  ~BlockPool() {
    for (void* p : free_) ::operator delete(p);
  }
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  void* allocate(size_t bytes) {
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
  void deallocate(void* p, size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (bytes == bytes_ && free_.size() < keep_) {
        free_.push_back(p);
        return;
      }
    }
    ::operator delete(p);
  }

 private:
  std::mutex mu_;
  std::vector<void*> free_;
  size_t bytes_ = 0;
  const size_t keep_;
};

// A standard allocator drawing single objects from a BlockPool (arrays go
// to ::operator new), for std::allocate_shared.
template <typename T>
struct PoolAllocator {
  static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__,
                "BlockPool blocks come from ::operator new(size_t)");
  using value_type = T;
  explicit PoolAllocator(BlockPool* p) : pool(p) {}
  template <typename U>
  PoolAllocator(const PoolAllocator<U>& o) : pool(o.pool) {}  // NOLINT: rebinding
  T* allocate(size_t n) {
    if (n != 1) return static_cast<T*>(::operator new(n * sizeof(T)));
    return static_cast<T*>(pool->allocate(sizeof(T)));
  }
  void deallocate(T* p, size_t n) {
    if (n != 1) {
      ::operator delete(p);
      return;
    }
    pool->deallocate(p, sizeof(T));
  }
  template <typename U>
  bool operator==(const PoolAllocator<U>& o) const {
    return pool == o.pool;
  }
  template <typename U>
  bool operator!=(const PoolAllocator<U>& o) const {
    return pool != o.pool;
  }
  BlockPool* pool;
};

}  // namespace kf
