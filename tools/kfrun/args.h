// Command-line parsing of kfrun. Pure: no side effects besides the returned
// value, so it is easy to reason about (and to test).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace kfrun {

// One entry of -H / --hostfile: a host name or address and how many ranks
// it takes. Entries naming the same host are merged (slots added).
struct HostSlots {
  std::string host;
  int slots = 1;
};

// The remote-exec template used when neither --rsh nor KF_RSH is given.
constexpr const char kDefaultRsh[] = "ssh -o BatchMode=yes {host}";

struct Options {
  int np = 0;                      // number of ranks, > 0 once parsed
  double timeout_seconds = 0;      // 0: no timeout
  bool prefix = true;              // "[rank] " before every output line
  bool help = false;               // -h / --help: print usage and exit 0
  // -x VAR=VAL (value given) and -x VAR (take the launcher's current value),
  // in command-line order; later entries win.
  std::vector<std::pair<std::string, std::string>> exports;
  std::vector<std::string> command;  // program and its arguments
  // -H/--hosts and --hostfile, in order; empty: every rank on this host.
  std::vector<HostSlots> hosts;
  // --rsh, else $KF_RSH, else kDefaultRsh.
  std::string rsh = kDefaultRsh;
};

struct ParseResult {
  bool ok = false;
  std::string error;  // one sentence, when !ok
  Options options;
};

// Parses argv[1..argc-1]. Options end at the first argument that is not an
// option (the program) or after "--".
ParseResult parse_args(int argc, const char* const* argv);

// "host1:2,host2,host3:4" (slots default to 1), appended to *out (merging
// repeated hosts). Returns false and sets *error on a malformed list.
bool parse_host_list(const std::string& text, std::vector<HostSlots>* out, std::string* error);

// The text of an OpenMPI-style hostfile: one host per line, optionally
// followed by "slots=N" (default 1) and "max_slots=N" (ignored); '#' starts
// a comment. Appended to *out like parse_host_list.
bool parse_hostfile_text(const std::string& text, std::vector<HostSlots>* out, std::string* error);

// Splits a remote-exec template into words as a shell would (whitespace,
// '...' and "..." quoting, backslash escapes; no expansions) and replaces
// every "{host}" by `host`. False and *error on an unterminated quote.
bool expand_rsh(const std::string& templ, const std::string& host, std::vector<std::string>* words,
                std::string* error);

// The usage text printed by -h and after a usage error.
std::string usage_text(const char* argv0);

}  // namespace kfrun
