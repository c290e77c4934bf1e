#include "kfrun/args.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace kfrun {
namespace {

// Largest communicator the library accepts (see kf_comm_init).
constexpr long kMaxRanks = 65536;

bool parse_np(const std::string& text, int* out) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  long v = std::strtol(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || v < 1 || v > kMaxRanks) return false;
  *out = static_cast<int>(v);
  return true;
}

bool parse_seconds(const std::string& text, double* out) {
  if (text.empty()) return false;
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  // A week is far beyond any test; the bound keeps the arithmetic on
  // milliseconds safely inside 64 bits.
  if (errno != 0 || *end != '\0' || !std::isfinite(v) || v <= 0 || v > 7 * 24 * 3600.0) {
    return false;
  }
  *out = v;
  return true;
}

bool valid_var_name(const std::string& name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return true;
}

// Splits "--name=value" into name and value; returns false for "--name".
bool split_inline(const std::string& arg, std::string* name, std::string* value) {
  size_t eq = arg.find('=');
  if (eq == std::string::npos) return false;
  *name = arg.substr(0, eq);
  *value = arg.substr(eq + 1);
  return true;
}

ParseResult fail(std::string message) {
  ParseResult r;
  r.error = std::move(message);
  return r;
}

}  // namespace

ParseResult parse_args(int argc, const char* const* argv) {
  ParseResult result;
  Options& opt = result.options;
  bool have_np = false;
  int i = 1;
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.empty() || arg[0] != '-' || arg == "-") break;  // the program

    std::string name = arg;
    std::string value;
    bool has_inline = arg.rfind("--", 0) == 0 && split_inline(arg, &name, &value);
    // Fetches the option's value: inline ("--np=4") or the next argument.
    auto take_value = [&](std::string* out) -> bool {
      if (has_inline) {
        *out = value;
        return true;
      }
      if (i + 1 >= argc) return false;
      *out = argv[++i];
      return true;
    };

    if (name == "-h" || name == "--help") {
      opt.help = true;
      result.ok = true;
      return result;
    } else if (name == "-np" || name == "-n" || name == "--np") {
      std::string v;
      if (!take_value(&v)) return fail(name + " needs a number of ranks");
      if (!parse_np(v, &opt.np)) {
        return fail(name + " " + v + ": the number of ranks must be an integer from 1 to " +
                    std::to_string(kMaxRanks));
      }
      have_np = true;
    } else if (name == "--timeout") {
      std::string v;
      if (!take_value(&v)) return fail("--timeout needs a number of seconds");
      if (!parse_seconds(v, &opt.timeout_seconds)) {
        return fail("--timeout " + v + ": expected a positive number of seconds");
      }
    } else if (name == "-x") {
      std::string v;
      if (!take_value(&v)) return fail("-x needs VAR=VALUE or VAR");
      size_t eq = v.find('=');
      std::string var = v.substr(0, eq);
      if (!valid_var_name(var)) return fail("-x " + v + ": '" + var + "' is not a variable name");
      if (eq == std::string::npos) {
        const char* current = std::getenv(var.c_str());
        if (current == nullptr) return fail("-x " + var + ": " + var + " is not set in kfrun's environment");
        opt.exports.emplace_back(var, current);
      } else {
        opt.exports.emplace_back(var, v.substr(eq + 1));
      }
    } else if (name == "-q" || name == "--no-prefix") {
      opt.prefix = false;
    } else {
      return fail("unknown option " + arg);
    }
  }
  for (; i < argc; ++i) opt.command.emplace_back(argv[i]);

  if (!have_np) return fail("missing -np N (the number of ranks)");
  if (opt.command.empty()) return fail("missing the program to run");
  result.ok = true;
  return result;
}

std::string usage_text(const char* argv0) {
  std::string name = (argv0 != nullptr && argv0[0] != '\0') ? argv0 : "kfrun";
  size_t slash = name.rfind('/');
  if (slash != std::string::npos) name = name.substr(slash + 1);
  return "usage: " + name + " -np N [--timeout S] [-x VAR=VAL | -x VAR]... [-q] [--] prog [args...]\n"
         "\n"
         "Starts N ranks of prog on this host with the environment libkungfu reads\n"
         "(KF_RANK, KF_SIZE, KF_LOCAL_RANK, KF_LOCAL_SIZE, KF_ROOT_ADDR, KF_JOB_SECRET).\n"
         "\n"
         "  -np N, -n N      number of ranks (1.." + std::to_string(kMaxRanks) + ")\n"
         "  --timeout S      kill all ranks after S seconds and exit with 124\n"
         "  -x VAR=VAL       set VAR in the ranks' environment\n"
         "  -x VAR           pass kfrun's current value of VAR (ranks inherit the whole\n"
         "                   environment anyway; this fails early if VAR is unset)\n"
         "  -q, --no-prefix  do not prefix output lines with \"[rank] \"\n"
         "  -h, --help       print this help\n"
         "  --               end of options\n"
         "\n"
         "Output: each line a rank writes appears whole, prefixed by \"[rank] \", on\n"
         "kfrun's stdout or stderr. Rank 0 reads kfrun's stdin when it is not a\n"
         "terminal; other ranks read /dev/null.\n"
         "\n"
         "Exit status: 0 when every rank exits 0; otherwise that of the first rank that\n"
         "failed (128+s for a rank killed by signal s), after the others are stopped\n"
         "(SIGTERM, then SIGKILL 3 s later). SIGINT, SIGTERM and SIGHUP are forwarded to\n"
         "the ranks and kfrun exits with 128+signal. 124: --timeout expired.\n"
         "126/127: the program cannot be executed / was not found. 2: usage error.\n";
}

}  // namespace kfrun
