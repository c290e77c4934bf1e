#include "base/status.h"

#include <cstring>

namespace kf {

std::string errno_text(const char* what, int err) {
  return std::string(what) + ": " + std::strerror(err);
}

}  // namespace kf
