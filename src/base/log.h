// Logging to stderr, filtered by KF_LOG_LEVEL (error, warn, info, debug).
// Each line carries the process id and, once known, the rank.
#pragma once

#include <string>

namespace kf {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3 };

bool log_enabled(LogLevel level);
void log_line(LogLevel level, const std::string& text);
// Sets the rank shown in this process's log lines (-1 = unknown).
void log_set_rank(int rank);

}  // namespace kf

#define KF_LOG(level, text)                                                   \
  do {                                                                        \
    if (::kf::log_enabled(::kf::LogLevel::level)) ::kf::log_line(::kf::LogLevel::level, (text)); \
  } while (0)
#define KF_LOG_ERROR(text) KF_LOG(kError, text)
#define KF_LOG_WARN(text) KF_LOG(kWarn, text)
#define KF_LOG_INFO(text) KF_LOG(kInfo, text)
#define KF_LOG_DEBUG(text) KF_LOG(kDebug, text)
