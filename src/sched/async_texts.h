// The texts that both paths of an asynchronous operation (the engine's
// message path, sched/async_engine.h, and the shared-memory lane,
// sched/async_lane.h) log or fail with, written once so that they stay
// identical: tests and users match on them.
#pragma once

#include <cstdint>
#include <string>

namespace kf {

// "rank(s) 1, 3": a comma-separated rank list with its prefix.
inline std::string ranks_text(const std::string& ranks) {
  return "rank(s) " + ranks;
}

// The stall warning: `label` ("operation 'x' #3") was submitted on `rank`
// `age_ms` ago, and `missing` (a rank list) has not submitted it yet.
inline std::string stall_text(const std::string& label, int rank, int64_t age_ms,
                              const std::string& missing) {
  return label + " was submitted on rank " + std::to_string(rank) + " " + std::to_string(age_ms) +
         " ms ago but not yet on " + ranks_text(missing);
}

// The cause of a timeout when `missing` (a rank list) never submitted it.
inline std::string never_submitted_text(const std::string& missing) {
  return ranks_text(missing) + " never submitted it";
}

// The cause of a timeout on a rank that submitted the operation after every
// other rank had already given up on it.
inline std::string gave_up_text() {
  return "the other ranks gave up on it before this rank submitted it";
}

// An operation that timed out after `timeout_ms`: `label`, then `cause`.
inline std::string timed_out_text(const std::string& label, int64_t timeout_ms,
                                  const std::string& cause) {
  return label + " timed out after " + std::to_string(timeout_ms) + " ms: " + cause;
}

}  // namespace kf
