#include "sched/any_completion.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace kf {
namespace {

std::atomic<uint64_t> g_completions{0};
std::atomic<uint32_t> g_watchers{0};

// Never destroyed: engine threads may still complete requests during exit.
std::mutex& watch_mu() {
  static std::mutex* mu = new std::mutex;
  return *mu;
}
std::condition_variable& watch_cv() {
  static std::condition_variable* cv = new std::condition_variable;
  return *cv;
}

}  // namespace

AnyCompletion::AnyCompletion() {
  g_watchers.fetch_add(1);
}

AnyCompletion::~AnyCompletion() {
  g_watchers.fetch_sub(1);
}

uint64_t AnyCompletion::count() {
  return g_completions.load();
}

void AnyCompletion::sleep(uint64_t seen, int64_t max_us) {
  std::unique_lock<std::mutex> lock(watch_mu());
  watch_cv().wait_for(lock, std::chrono::microseconds(max_us),
                      [seen] { return g_completions.load() != seen; });
}

void AnyCompletion::signal() {
  // With no watcher, nothing: the request's done() turned true (a
  // sequentially consistent store) before this load, and a watcher
  // registers (sequentially consistent) before it looks at the requests.
  // So a watcher this load misses sees the request done. (An increment
  // here for every completion was an atomic instruction per operation.)
  if (g_watchers.load() == 0) return;
  g_completions.fetch_add(1);
  // A watcher reads the count under the lock before it sleeps: taking the
  // lock here means that it either saw the new count or sleeps and is
  // notified. (A watcher registers before it reads the count it compares.)
  { std::lock_guard<std::mutex> lock(watch_mu()); }
  watch_cv().notify_all();
}

}  // namespace kf
