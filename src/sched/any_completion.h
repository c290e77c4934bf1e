// AnyCompletion: a process-wide signal of request completions, for a thread
// that waits for any of several requests (kf_request_wait_any), perhaps of
// several communicators: they have no condition in common. Each completion
// costs one load, and an atomic increment, a lock and a notification only
// while a thread is inside kf_request_wait_any.
#pragma once

#include <cstdint>

namespace kf {

class AnyCompletion {
 public:
  AnyCompletion();   // registers the calling thread as a watcher
  ~AnyCompletion();  // and unregisters it
  AnyCompletion(const AnyCompletion&) = delete;
  AnyCompletion& operator=(const AnyCompletion&) = delete;

  // Completions so far in the process while some thread watched. Read it
  // (watching) before looking at the requests: sleep() then wakes at the
  // first completion after that look.
  static uint64_t count();
  // Sleeps until count() differs from `seen`, at most `max_us`.
  void sleep(uint64_t seen, int64_t max_us);
  // Called by every request as it completes, after its done() turned true
  // by a sequentially consistent store (see signal()).
  static void signal();
};

}  // namespace kf
