// kfinfo: prints the library version, the compiled-in features and every
// KF_* knob with its default, current value and documentation.
#include <cstdio>
#include <cstring>

#include "kfinfo/report.h"

namespace {

void usage(std::FILE* to) {
  std::fprintf(to,
               "usage: kfinfo [--json]\n"
               "Prints libkungfu's version, compiled-in features and configuration knobs\n"
               "(KF_* environment variables) with their defaults and current values.\n"
               "  --json     print the same as JSON\n"
               "  -h, --help print this help\n");
}

}  // namespace

int main(int argc, char** argv) {
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (std::strcmp(argv[i], "-h") == 0 || std::strcmp(argv[i], "--help") == 0) {
      usage(stdout);
      return 0;
    } else {
      std::fprintf(stderr, "kfinfo: unknown argument %s\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }
  kfinfo::Report report = kfinfo::collect_report();
  std::string text = json ? kfinfo::format_json(report) : kfinfo::format_text(report);
  std::fputs(text.c_str(), stdout);
  return std::fflush(stdout) == 0 ? 0 : 1;
}
