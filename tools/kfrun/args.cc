#include "kfrun/args.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

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

// Slots of one host: the same bound as ranks.
bool parse_slots(const std::string& text, int* out) { return parse_np(text, out); }

// Host names and addresses: letters, digits and ".-_" (names), ":" is the
// slot separator so IPv6 literals are not supported here.
bool valid_host(const std::string& host) {
  if (host.empty() || host.size() > 253) return false;
  for (char c : host) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '-' || c == '_';
    if (!ok) return false;
  }
  return true;
}

void add_host(const std::string& host, int slots, std::vector<HostSlots>* out) {
  for (HostSlots& h : *out) {
    if (h.host == host) {
      h.slots = static_cast<int>(std::min<long>(kMaxRanks, static_cast<long>(h.slots) + slots));
      return;
    }
  }
  out->push_back({host, slots});
}

ParseResult fail(std::string message) {
  ParseResult r;
  r.error = std::move(message);
  return r;
}

}  // namespace

bool parse_host_list(const std::string& text, std::vector<HostSlots>* out, std::string* error) {
  if (text.empty()) {
    *error = "the host list is empty";
    return false;
  }
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    std::string entry = text.substr(start, comma - start);
    start = comma + 1;
    std::string host = entry;
    int slots = 1;
    size_t colon = entry.find(':');
    if (colon != std::string::npos) {
      host = entry.substr(0, colon);
      if (!parse_slots(entry.substr(colon + 1), &slots)) {
        *error = "'" + entry + "': the slots after ':' must be an integer from 1 to " + std::to_string(kMaxRanks);
        return false;
      }
    }
    if (!valid_host(host)) {
      *error = "'" + entry + "' is not host or host:slots";
      return false;
    }
    add_host(host, slots, out);
  }
  return true;
}

bool parse_hostfile_text(const std::string& text, std::vector<HostSlots>* out, std::string* error) {
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    size_t hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string host;
    if (!(words >> host)) continue;  // blank or comment
    auto bad = [&](const std::string& what) {
      *error = "line " + std::to_string(line_no) + ": " + what;
      return false;
    };
    if (!valid_host(host)) return bad("'" + host + "' is not a host name or address");
    int slots = 1;
    std::string word;
    while (words >> word) {
      if (word.rfind("slots=", 0) == 0) {
        if (!parse_slots(word.substr(6), &slots)) return bad("'" + word + "': expected slots=N, N from 1");
      } else if (word.rfind("max_slots=", 0) == 0 || word.rfind("max-slots=", 0) == 0) {
        // Oversubscription limits do not apply: kfrun never places more
        // ranks on a host than its slots.
      } else {
        return bad("unexpected '" + word + "' (expected slots=N)");
      }
    }
    add_host(host, slots, out);
  }
  if (out->empty()) {
    *error = "no hosts in the hostfile";
    return false;
  }
  return true;
}

bool expand_rsh(const std::string& templ, const std::string& host, std::vector<std::string>* words,
                std::string* error) {
  words->clear();
  std::string cur;
  bool in_word = false;
  char quote = 0;
  for (size_t i = 0; i < templ.size(); ++i) {
    char c = templ[i];
    if (quote == '\'') {
      if (c == '\'') {
        quote = 0;
      } else {
        cur.push_back(c);
      }
    } else if (quote == '"') {
      if (c == '"') {
        quote = 0;
      } else if (c == '\\' && i + 1 < templ.size() &&
                 std::strchr("\"\\$`", templ[i + 1]) != nullptr) {
        cur.push_back(templ[++i]);
      } else {
        cur.push_back(c);
      }
    } else if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words->push_back(cur);
      cur.clear();
      in_word = false;
    } else {
      in_word = true;
      if (c == '\'' || c == '"') {
        quote = c;
      } else if (c == '\\' && i + 1 < templ.size()) {
        cur.push_back(templ[++i]);
      } else {
        cur.push_back(c);
      }
    }
  }
  if (quote != 0) {
    *error = "unterminated quote in the remote-exec template '" + templ + "'";
    return false;
  }
  if (in_word) words->push_back(cur);
  if (words->empty()) {
    *error = "the remote-exec template is empty";
    return false;
  }
  for (std::string& w : *words) {
    size_t pos = 0;
    while ((pos = w.find("{host}", pos)) != std::string::npos) {
      w.replace(pos, 6, host);
      pos += host.size();
    }
  }
  return true;
}

ParseResult parse_args(int argc, const char* const* argv) {
  ParseResult result;
  Options& opt = result.options;
  bool have_np = false;
  bool have_rsh = false;
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
    } else if (name == "-H" || name == "--host" || name == "--hosts") {
      std::string v;
      if (!take_value(&v)) return fail(name + " needs host[:slots],...");
      std::string err;
      if (!parse_host_list(v, &opt.hosts, &err)) return fail(name + " " + v + ": " + err);
    } else if (name == "--hostfile") {
      std::string v;
      if (!take_value(&v)) return fail("--hostfile needs a file name");
      std::ifstream in(v);
      if (!in) return fail("--hostfile " + v + ": cannot open " + v + ": " + std::strerror(errno));
      std::stringstream text;
      text << in.rdbuf();
      std::string err;
      if (!parse_hostfile_text(text.str(), &opt.hosts, &err)) return fail("--hostfile " + v + ": " + err);
    } else if (name == "--rsh") {
      if (!take_value(&opt.rsh)) return fail("--rsh needs a command template");
      have_rsh = true;
    } else if (name == "-q" || name == "--no-prefix") {
      opt.prefix = false;
    } else {
      return fail("unknown option " + arg);
    }
  }
  for (; i < argc; ++i) opt.command.emplace_back(argv[i]);

  long slots = 0;
  for (const HostSlots& h : opt.hosts) slots += h.slots;
  if (!have_np) {
    if (opt.hosts.empty()) return fail("missing -np N (the number of ranks)");
    if (slots > kMaxRanks) return fail("the hosts have " + std::to_string(slots) + " slots; give -np N");
    opt.np = static_cast<int>(slots);
  } else if (!opt.hosts.empty() && opt.np > slots) {
    return fail("-np " + std::to_string(opt.np) + " is more than the " + std::to_string(slots) +
                " slots of the hosts given");
  }
  if (!have_rsh) {
    const char* env_rsh = std::getenv("KF_RSH");
    if (env_rsh != nullptr && env_rsh[0] != '\0') opt.rsh = env_rsh;
  }
  if (opt.command.empty()) return fail("missing the program to run");
  result.ok = true;
  return result;
}

std::string usage_text(const char* argv0) {
  std::string name = (argv0 != nullptr && argv0[0] != '\0') ? argv0 : "kfrun";
  size_t slash = name.rfind('/');
  if (slash != std::string::npos) name = name.substr(slash + 1);
  return "usage: " + name +
         " [-np N] [-H host[:slots],... | --hostfile FILE] [--rsh TEMPLATE]\n"
         "             [--timeout S] [-x VAR=VAL | -x VAR]... [-q] [--] prog [args...]\n"
         "\n"
         "Starts N ranks of prog with the environment libkungfu reads (KF_RANK,\n"
         "KF_SIZE, KF_LOCAL_RANK, KF_LOCAL_SIZE, KF_ROOT_ADDR, KF_JOB_SECRET): on this\n"
         "host, or on the hosts given by -H or --hostfile.\n"
         "\n"
         "  -np N, -n N      number of ranks (1.." +
         std::to_string(kMaxRanks) +
         "); with hosts, the default\n"
         "                   is the sum of their slots, and N may not exceed it\n"
         "  -H, --hosts LIST host[:slots],... (slots default to 1): ranks fill the\n"
         "                   hosts in order, slots of the first host first\n"
         "  --hostfile FILE  OpenMPI-style hostfile: lines \"host slots=N\", '#' comments\n"
         "  --rsh TEMPLATE   how to start a rank on a remote host (default: $KF_RSH,\n"
         "                   else \"" +
         std::string(kDefaultRsh) +
         "\")\n"
         "  --timeout S      kill all ranks after S seconds and exit with 124\n"
         "  -x VAR=VAL       set VAR in the ranks' environment\n"
         "  -x VAR           pass kfrun's current value of VAR (local ranks inherit the\n"
         "                   whole environment anyway; remote ranks get only -x ones)\n"
         "  -q, --no-prefix  do not prefix output lines with \"[rank] \"\n"
         "  -h, --help       print this help\n"
         "  --               end of options\n"
         "\n"
         "Hosts: localhost, 127.x.x.x, this host's name and its own addresses are\n"
         "this host: those ranks are started directly, and all of them share one\n"
         "KF_LOCAL_RANK numbering. A remote rank is started as the words of TEMPLATE\n"
         "({host} replaced by the host as given) followed by ONE more argument, a\n"
         "shell command line:\n"
         "    exec sh -c 'SCRIPT' kf-rank CWD env KF_RANK=.. (launcher and -x\n"
         "    variables) prog args\n"
         "ssh hands it to the remote (POSIX or csh) login shell; a template that runs\n"
         "a program directly must end in a shell, e.g. --rsh \"ip netns exec\n"
         "ns-{host} sh -c\". SCRIPT changes to CWD and execs the rank; first, when its\n"
         "stdin is a pipe or a socket, it starts a watcher of it. kfrun holds that\n"
         "stdin open and never writes it, so when it closes (kfrun or the remote-exec\n"
         "client ended, the connection lost) while the rank runs, the watcher sends\n"
         "the rank's process group SIGTERM, then SIGKILL 3 s later. ssh does not\n"
         "signal a remote command when its client dies, nor does it pass on the\n"
         "signals kfrun forwards: over ssh, this is all a remote rank gets. The\n"
         "remote-exec command must pass its stdin on (ssh does; with \"ssh -n\" or\n"
         "another /dev/null stdin, or without /dev/stdin there, the rank is not\n"
         "watched). A remote rank 0 that reads kfrun's stdin runs as \"cd CWD\n"
         "2>/dev/null; exec env KF_RANK=.. prog args\", unwatched (\"ssh -tt\" ties it\n"
         "to its client, at the price of a pty: stderr merged into stdout, input\n"
         "echoed).\n"
         "KF_ROOT_ADDR is 127.0.0.1 when every rank is local; else the first host's\n"
         "address (its name when it does not resolve here; when it is this host: the\n"
         "local address of the route to the first remote host). Its port is free now\n"
         "when rank 0 is here, else random in 20000..32767.\n"
         "\n"
         "Output: each line a rank writes appears whole, prefixed by \"[rank] \", on\n"
         "kfrun's stdout or stderr. Rank 0 reads kfrun's stdin when it is neither a\n"
         "terminal nor /dev/null; other ranks read /dev/null.\n"
         "\n"
         "Exit status: 0 when every rank exits 0; otherwise that of the first rank that\n"
         "failed (128+s for a rank killed by signal s), after the others are stopped\n"
         "(SIGTERM, then SIGKILL 3 s later). SIGINT, SIGTERM and SIGHUP are forwarded to\n"
         "the ranks and kfrun exits with 128+signal. 124: --timeout expired.\n"
         "126/127: the program cannot be executed / was not found. 2: usage error.\n"
         "A remote rank's code is that of the remote-exec command (ssh: 255 when the\n"
         "connection fails).\n";
}

}  // namespace kfrun
