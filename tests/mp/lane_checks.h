// Helpers of the shared-memory lane's multi-process tests (async_lane.cc,
// async_lane_thread.cc): PASS/FAIL lines and the ranks' test values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace lanetest {

inline int g_fails = 0;  // FAIL lines so far
inline int g_rank = 0;   // this rank, for the lines

inline void report(bool ok, const std::string& what) {
  std::printf("%s rank %d: %s\n", ok ? "PASS" : "FAIL", g_rank, what.c_str());
  if (!ok) ++g_fails;
}

// Rank r contributes r + 1 + i at element i (of int32).
inline int32_t value(int r, size_t i) {
  return static_cast<int32_t>(r + 1 + static_cast<int>(i % 1000));
}

}  // namespace lanetest
