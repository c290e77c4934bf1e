#include "base/host_id.h"

#include <unistd.h>

#include <fstream>

namespace kf {
namespace {

std::string first_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

std::string host_identity() {
  char name[256] = {0};
  if (gethostname(name, sizeof(name) - 1) != 0) name[0] = '\0';
  std::string id = first_line("/proc/sys/kernel/random/boot_id");
  if (id.empty()) id = first_line("/etc/machine-id");
  return std::string(name) + "/" + id;
}

}  // namespace kf
