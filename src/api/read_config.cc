#include "api/read_config.h"

#include <cstddef>

namespace kf {
namespace api {

Status read_config(const kf_config_t* config, int64_t default_timeout_ms, CommOptions* out) {
  out->timeout_ms = default_timeout_ms;
  if (config == nullptr) return Status::ok();
  if (config->size < offsetof(kf_config_t, timeout_ms) || config->magic != KF_CONFIG_MAGIC) {
    return invalid_argument("config was not initialised with KF_CONFIG_INITIALIZER");
  }
  auto covers = [config](size_t offset, size_t field) { return config->size >= offset + field; };
  if (covers(offsetof(kf_config_t, timeout_ms), sizeof(config->timeout_ms)) &&
      config->timeout_ms != -1) {
    if (config->timeout_ms < -1) return invalid_argument("config timeout_ms must be >= -1");
    out->timeout_ms = config->timeout_ms;
  }
  if (covers(offsetof(kf_config_t, name), sizeof(config->name)) && config->name != nullptr) {
    out->name = config->name;
  }
  return Status::ok();
}

}  // namespace api
}  // namespace kf
