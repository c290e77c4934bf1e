// Command-line parsing of kfrun. Pure: no side effects besides the returned
// value, so it is easy to reason about (and to test).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace kfrun {

struct Options {
  int np = 0;                      // number of ranks, > 0 once parsed
  double timeout_seconds = 0;      // 0: no timeout
  bool prefix = true;              // "[rank] " before every output line
  bool help = false;               // -h / --help: print usage and exit 0
  // -x VAR=VAL (value given) and -x VAR (take the launcher's current value),
  // in command-line order; later entries win.
  std::vector<std::pair<std::string, std::string>> exports;
  std::vector<std::string> command;  // program and its arguments
};

struct ParseResult {
  bool ok = false;
  std::string error;  // one sentence, when !ok
  Options options;
};

// Parses argv[1..argc-1]. Options end at the first argument that is not an
// option (the program) or after "--".
ParseResult parse_args(int argc, const char* const* argv);

// The usage text printed by -h and after a usage error.
std::string usage_text(const char* argv0);

}  // namespace kfrun
