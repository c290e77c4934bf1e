#include "base/log.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace kf {
namespace {

std::atomic<int> g_rank{-1};

LogLevel parse_level() {
  const char* v = std::getenv("KF_LOG_LEVEL");
  if (v == nullptr) return LogLevel::kWarn;
  if (std::strcmp(v, "error") == 0) return LogLevel::kError;
  if (std::strcmp(v, "info") == 0) return LogLevel::kInfo;
  if (std::strcmp(v, "debug") == 0) return LogLevel::kDebug;
  return LogLevel::kWarn;
}

const char* level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kError: return "ERROR";
    case LogLevel::kWarn: return "WARN";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kDebug: return "DEBUG";
  }
  return "?";
}

}  // namespace

bool log_enabled(LogLevel level) {
  // Read once: logging is on hot paths and the level does not change at run time.
  static const LogLevel threshold = parse_level();
  return static_cast<int>(level) <= static_cast<int>(threshold);
}

void log_line(LogLevel level, const std::string& text) {
  // One fprintf per line so lines of concurrent threads do not interleave.
  std::fprintf(stderr, "[kungfu %s pid=%d rank=%d] %s\n", level_name(level),
               static_cast<int>(getpid()), g_rank.load(), text.c_str());
}

void log_set_rank(int rank) { g_rank.store(rank); }

}  // namespace kf
