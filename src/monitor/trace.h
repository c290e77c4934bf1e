// Timeline: a per-rank Chrome-trace / Perfetto JSON file of what the
// scheduler did with every operation: submit, start, each chunk (begin and
// end), finish, with the operation's name, priority and bytes.
//
// Enabled by KF_TIMELINE=/path/prefix, which writes /path/prefix.rank<N>.json
// (prefix.<communicator>.rank<N>.json for split communicators)
// when the tracer is closed (communicator destroyed). The file is bounded:
// after KF_TIMELINE_MAX_EVENTS events or KF_TIMELINE_MAX_BYTES bytes of JSON,
// later events are dropped and counted; the count is written into the file
// ("otherData": {"dropped_events": N}) and logged as a warning.
//
// Cost when off: the owner keeps a null Tracer pointer and tests it before
// each call (`if (tracer) tracer->chunk_begin(...)`), one predictable branch.
// When on, each event is formatted under a mutex into an in-memory buffer
// (a few hundred nanoseconds); the file is written once, at close, so no
// file I/O happens on the data path. All methods are thread-safe.
//
// Layout in the viewer (chrome://tracing or https://ui.perfetto.dev): one
// process per rank; "submit" is an instant event on the submitting thread;
// each operation is an async slice (from start to finish) on its own track,
// keyed by the operation id, and its chunks are nested slices inside it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "base/status.h"

namespace kf {

struct TraceOptions {
  std::string path;                 // the file to write at close
  int rank = 0;                     // shown as the process name "rank N"
  uint64_t max_events = 1000000;    // events kept; later ones are dropped
  uint64_t max_bytes = 64u << 20;   // bytes of JSON kept; later events are dropped
};

class Tracer {
 public:
  // The tracer the knobs ask for: null when KF_TIMELINE is unset or empty.
  static std::unique_ptr<Tracer> from_env(int rank, const std::string& comm_name = "world");
  // The file name KF_TIMELINE=prefix gives rank `rank` of communicator
  // `comm_name`: prefix.rank<N>.json for the world communicator, and
  // prefix.<name>.rank<N>.json for others (a split child's rank numbers
  // would otherwise collide with the world's files), with every character
  // of the name other than letters, digits, '-' and '_' written as '_'.
  static std::string path_for(const std::string& prefix, int rank,
                              const std::string& comm_name = "world");

  explicit Tracer(TraceOptions opts);
  // Writes the file if close() has not (errors are logged, not thrown).
  ~Tracer();
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  // `id` identifies one operation (e.g. name hash ^ sequence number); the
  // same id must be passed to every event of that operation.
  void submit(uint64_t id, const std::string& name, int priority, uint64_t bytes);
  void start(uint64_t id, const std::string& name, int priority, uint64_t bytes);
  void chunk_begin(uint64_t id, const std::string& name, uint32_t chunk, uint64_t bytes);
  void chunk_end(uint64_t id, const std::string& name, uint32_t chunk);
  // `status` is kf_status_string()-like text, e.g. "ok" or "timeout".
  void finish(uint64_t id, const std::string& name, const char* status);
  // A free-form instant event (e.g. a tuner decision), with a JSON object
  // `args_json` (already well-formed, e.g. {"partition":1048576}) or "".
  void instant(const std::string& name, const std::string& args_json);

  // Writes the JSON file (once; later calls return the first result).
  Status close();

  uint64_t recorded() const;
  uint64_t dropped() const;
  const std::string& path() const { return opts_.path; }

 private:
  // Appends one formatted event, or counts it as dropped. Caller holds mu_.
  void append_locked(const std::string& event);
  double now_us() const;

  const TraceOptions opts_;
  const std::chrono::steady_clock::time_point t0_;
  mutable std::mutex mu_;
  std::string events_;     // comma-separated JSON objects; guarded by mu_
  uint64_t recorded_ = 0;  // guarded by mu_
  uint64_t dropped_ = 0;   // guarded by mu_
  bool closed_ = false;    // guarded by mu_
  Status close_status_;    // guarded by mu_
};

}  // namespace kf
