#include "base/block_pool.h"

#include <new>

namespace kf {
namespace {

// The free blocks of one size a thread keeps.
struct Shelf {
  size_t n = 0;
  void* blocks[BlockPool::kThreadKeep];
};

// A thread's shelves, and the block size of each (0: unused) in one line,
// so that finding a size reads one cache line.
struct alignas(64) Shelves {
  size_t bytes[BlockPool::kThreadSizes] = {};
  Shelf shelf[BlockPool::kThreadSizes];
};

// A thread's shelves: made at its first allocation (deallocate() never
// allocates: destructors reach it), deleted with their blocks when the
// thread ends (Cleanup). A thread that only frees blocks frees them to the
// pools, and so does one whose shelves are gone (`ended`: thread-local
// objects destroyed after Cleanup may still free blocks). Trivial, so that
// reading it needs no initialisation check. (The default TLS model: one
// __tls_get_addr call per access. The initial-exec model would save it but
// takes glibc's small static TLS reserve, and a library loaded by dlopen
// into a process that has used it up, e.g. from Python after other native
// modules, would fail to load.)
struct ThreadShelves {
  Shelves* shelves;
  bool ended;
};
thread_local ThreadShelves t_shelves;

struct Cleanup {
  ~Cleanup() {
    ThreadShelves& ts = t_shelves;
    ts.ended = true;
    if (ts.shelves == nullptr) return;
    for (const Shelf& sh : ts.shelves->shelf) {
      for (size_t j = 0; j < sh.n; ++j) ::operator delete(sh.blocks[j]);
    }
    delete ts.shelves;
    ts.shelves = nullptr;
  }
};

// The cold part of shelf_for(): the thread's first shelves.
__attribute__((noinline)) Shelves* make_shelves() {
  ThreadShelves& ts = t_shelves;
  if (ts.ended) return nullptr;
  static thread_local Cleanup cleanup;  // registered here, at the first shelves
  (void)cleanup;
  return ts.shelves = new Shelves;
}

// The calling thread's shelf for `bytes` (with `make`, the shelves are made
// and an unused one taken if need be), or null: nothing kept, the thread is
// ending, or every shelf holds another size. `hint`: the pool's guess of
// the shelf's index, tried first and updated (threads usually take their
// sizes in the same order).
inline Shelf* shelf_for(size_t bytes, bool make, std::atomic<uint32_t>* hint) {
  if (!kKeepMemory) return nullptr;
  Shelves* s = t_shelves.shelves;
  if (s == nullptr && (!make || (s = make_shelves()) == nullptr)) return nullptr;
  const uint32_t h = hint->load(std::memory_order_relaxed);
  if (h < BlockPool::kThreadSizes && s->bytes[h] == bytes) return &s->shelf[h];
  for (uint32_t i = 0; i < BlockPool::kThreadSizes; ++i) {
    if (s->bytes[i] == 0) {
      if (!make) return nullptr;
      s->bytes[i] = bytes;
    }
    if (s->bytes[i] == bytes) {
      hint->store(i, std::memory_order_relaxed);
      return &s->shelf[i];
    }
  }
  return nullptr;
}

// Asks the CPU to fetch the `bytes` at `block` for writing.
inline void prefetch_block(const void* block, size_t bytes) {
  const char* p = static_cast<const char*>(block);
  for (size_t off = 0; off < bytes; off += 64) __builtin_prefetch(p + off, 1);
  __builtin_prefetch(p + bytes - 1, 1);  // (a block need not start a line)
}

}  // namespace

BlockPool::~BlockPool() {
  for (void* p : free_) ::operator delete(p);
}

void* BlockPool::allocate(size_t bytes) {
  if (Shelf* s = shelf_for(bytes, true, &hint_); s != nullptr && s->n > 0) {
    void* p = s->blocks[--s->n];
    if (s->n > 0) prefetch_block(s->blocks[s->n - 1], bytes);
    return p;
  }
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
  if (Shelf* s = shelf_for(bytes, false, &hint_); s != nullptr && s->n < kThreadKeep) {
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
  std::atomic<uint32_t> hint{0};
  Shelf* s = shelf_for(bytes, false, &hint);
  return s != nullptr ? s->n : 0;
}

}  // namespace kf
