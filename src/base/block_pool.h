// BlockPool: keeps the memory of objects made and destroyed once per
// operation (a request, a lane operation) for the next ones, instead of
// returning it to malloc.
//
// Why: a training step makes and destroys a few such objects per tensor,
// dozens of the same size in a burst. malloc keeps only a handful of each
// size in its per-thread cache; the rest go through its general paths,
// whose code and data a step's bulk data has pushed out of the CPU's
// caches by then. A pool's free list is a few lines of code.
//
// Two tiers. Each thread keeps up to kThreadKeep free blocks of each of a
// few sizes for itself, with no lock: locking and unlocking cost two atomic
// instructions, and an operation makes and destroys a request and a lane
// operation, so four locks per operation were a fifth of a 4 KiB
// operation's overhead. Beyond that, and for the blocks freed by a thread
// that allocates none of that size (a lane operation may die on the lane
// thread), the pool's own list, under its mutex. Blocks are plain
// ::operator new memory of one size, so a thread's blocks serve every pool
// of that size, and a thread that ends deletes its own.
//
// One block size per pool (that of the first allocation; others go to
// ::operator new). Thread safe. The pool must outlive every block it gave
// out (a static pointer never deleted, or a member declared before the
// containers of the objects). Use through PoolAllocator with
// std::allocate_shared. Under AddressSanitizer nothing is kept (kKeepMemory),
// so that a use after free is still caught.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
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
  // Free blocks a thread keeps of each size (of at most kThreadSizes sizes)
  // before the pool's list.
  static constexpr size_t kThreadKeep = 128;
  static constexpr size_t kThreadSizes = 8;

  // Keeps at most `keep` free blocks in the pool's list (room for them is
  // reserved here: deallocate(), reached from destructors, never
  // allocates), beyond those the threads keep.
  explicit BlockPool(size_t keep) : keep_(kKeepMemory ? keep : 0) { free_.reserve(keep_); }
  ~BlockPool();
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  // A block from the calling thread's shelf hands the CPU a prefetch of the
  // next one there, for writing: the next allocation (a burst makes one per
  // tensor) finds it in cache rather than where a step's bulk data pushed
  // it since it was freed. A hint only.
  void* allocate(size_t bytes);
  void deallocate(void* p, size_t bytes);

  // For tests: the free blocks in the pool's list, and those of `bytes`
  // the calling thread keeps.
  size_t kept() const;
  static size_t thread_kept(size_t bytes);

 private:
  mutable std::mutex mu_;
  std::vector<void*> free_;
  size_t bytes_ = 0;
  const size_t keep_;
  std::atomic<uint32_t> hint_{0};  // where threads' shelves usually hold this size
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
