// What kfinfo reports: versions, compiled-in features and every knob, and
// the two ways of printing it (aligned text, JSON).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace kfinfo {

struct KnobRow {
  std::string name;
  std::string default_value;
  std::string value;  // current: the environment's if set, else the default
  bool from_env = false;
  std::string doc;
};

struct Report {
  int header_major = 0, header_minor = 0, header_patch = 0;
  int header_code = 0;   // KF_VERSION_CODE of the headers kfinfo was built with
  int runtime_code = 0;  // kf_get_version()
  std::vector<std::pair<std::string, bool>> features;  // name, compiled in
  std::vector<KnobRow> knobs;
};

// Collects the report from the library and the environment.
Report collect_report();

std::string format_text(const Report& r);
std::string format_json(const Report& r);

}  // namespace kfinfo
