#include "base/config.h"

#include <cerrno>
#include <cstdlib>

#include "base/log.h"

namespace kf {

const std::vector<KnobInfo>& knob_table() {
  static const std::vector<KnobInfo> table = {
#define KF_KNOB(name, def, doc) {#name, def, doc},
#include "base/knobs.def"
#undef KF_KNOB
  };
  return table;
}

const KnobInfo& knob_info(Knob k) { return knob_table()[static_cast<size_t>(k)]; }

bool knob_is_set(Knob k) {
  const char* v = std::getenv(knob_info(k).name);
  return v != nullptr && v[0] != '\0';
}

std::string knob_string(Knob k) {
  const KnobInfo& info = knob_info(k);
  const char* v = std::getenv(info.name);
  return (v != nullptr && v[0] != '\0') ? std::string(v) : std::string(info.default_value);
}

namespace {

int64_t default_int(const KnobInfo& info) { return std::strtoll(info.default_value, nullptr, 10); }

}  // namespace

int64_t knob_int(Knob k) {
  const KnobInfo& info = knob_info(k);
  std::string v = knob_string(k);
  errno = 0;
  char* end = nullptr;
  long long parsed = std::strtoll(v.c_str(), &end, 10);
  if (errno != 0 || end == v.c_str() || *end != '\0') {
    KF_LOG_WARN(std::string(info.name) + "=\"" + v + "\" is not an integer; using default " +
                info.default_value);
    return default_int(info);
  }
  return parsed;
}

uint64_t knob_positive(Knob k) {
  const int64_t v = knob_int(k);
  return static_cast<uint64_t>(v > 0 ? v : default_int(knob_info(k)));
}

}  // namespace kf
