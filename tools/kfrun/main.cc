// kfrun: starts N ranks of a program, on this host or on the hosts given
// (remote ones through a remote-exec command such as ssh), with the
// environment libkungfu reads, forwards their output line by line with a
// "[rank] " prefix, and makes sure that when the job ends, for whatever
// reason, no rank is left.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <string>
#include <vector>

#include "kfrun/args.h"
#include "kfrun/env.h"
#include "kfrun/spawn.h"
#include "kfrun/supervisor.h"

extern char** environ;

namespace {

constexpr int kExitUsage = 2;
constexpr int kExitLauncherError = 1;

void error_line(const std::string& text) { std::fprintf(stderr, "kfrun: %s\n", text.c_str()); }

// Descriptors 0..2 must be open, so that pipe ends never land on them (the
// child's dup2 onto 1 and 2 relies on it) and ranks always have them.
void ensure_std_fds() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) >= 0) continue;
    int null_fd = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
    if (null_fd >= 0 && null_fd != fd) {
      ::dup2(null_fd, fd);
      ::close(null_fd);
    }
  }
}

// Whether kfrun's stdin is /dev/null: nothing to pass on to rank 0.
bool stdin_is_dev_null() {
  struct stat in = {};
  struct stat null = {};
  return ::fstat(0, &in) == 0 && ::stat("/dev/null", &null) == 0 && S_ISCHR(in.st_mode) &&
         in.st_rdev == null.st_rdev;
}

// Three pipe ends per rank: allow as many descriptors as the hard limit does.
void raise_fd_limit() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }
}

}  // namespace

int main(int argc, char** argv) {
  // Block the signals kfrun handles before anything else, so none is lost
  // between here and the signalfd; the ranks get the original mask back.
  // A signal kfrun was started with ignored (nohup, a background job of a
  // shell) stays ignored, for kfrun and, inherited, for the ranks.
  sigset_t handled;
  sigset_t original;
  sigemptyset(&handled);
  sigaddset(&handled, SIGCHLD);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction current {};
    if (sigaction(s, nullptr, &current) == 0 && current.sa_handler == SIG_IGN) continue;
    sigaddset(&handled, s);
  }
  sigprocmask(SIG_BLOCK, &handled, &original);
  // Inherited SIGCHLD = SIG_IGN would make the kernel reap the ranks and
  // hide their exit status.
  signal(SIGCHLD, SIG_DFL);
  // A closed stdout must not kill kfrun (and leave ranks behind).
  signal(SIGPIPE, SIG_IGN);
  ensure_std_fds();

  kfrun::ParseResult parsed = kfrun::parse_args(argc, argv);
  if (!parsed.ok) {
    error_line(parsed.error);
    std::string usage = kfrun::usage_text(argv[0]);
    std::fprintf(stderr, "%s(-h for help)\n", usage.substr(0, usage.find('\n') + 1).c_str());
    return kExitUsage;
  }
  const kfrun::Options& opt = parsed.options;
  if (opt.help) {
    std::printf("%s", kfrun::usage_text(argv[0]).c_str());
    return 0;
  }

  std::vector<bool> local;
  for (const kfrun::HostSlots& h : opt.hosts) local.push_back(kfrun::is_local_host(h.host));
  std::vector<kfrun::RankPlace> places = kfrun::place_ranks(opt.hosts, local, opt.np);
  bool any_local = false;
  bool any_remote = false;
  for (const kfrun::RankPlace& p : places) (p.remote ? any_remote : any_local) = true;

  std::string error;
  std::string path;  // the program, for local ranks
  if (any_local) {
    int code = kfrun::resolve_program(opt.command[0], &path, &error);
    if (code != 0) {
      error_line(error);
      return code;
    }
  }
  std::string rsh_path;  // the remote-exec program, for remote ranks
  if (any_remote) {
    std::vector<std::string> words;
    if (!kfrun::expand_rsh(opt.rsh, "", &words, &error)) {
      error_line(error);
      return kExitUsage;
    }
    int code = kfrun::resolve_program(words[0], &rsh_path, &error);
    if (code != 0) {
      error_line("remote-exec command: " + error);
      return code;
    }
  }
  for (const auto& [name, value] : opt.exports) {
    if (kfrun::is_launcher_variable(name)) {
      error_line("-x " + name + ": kfrun sets " + name + " itself; ignoring -x");
    }
  }

  kfrun::JobInfo job;
  job.size = opt.np;
  job.root_addr = kfrun::choose_root_addr(places, &error);
  if (job.root_addr.empty()) {
    error_line("cannot choose the rendezvous address (KF_ROOT_ADDR): " + error);
    return kExitLauncherError;
  }
  job.job_secret = kfrun::make_job_secret(&error);
  if (job.job_secret.empty()) {
    error_line("cannot make the job secret: " + error);
    return kExitLauncherError;
  }
  // Remote ranks start in the same directory when it exists there.
  std::string cwd;
  if (any_remote) {
    char buf[PATH_MAX];
    if (::getcwd(buf, sizeof(buf)) != nullptr) cwd = buf;
  }

  raise_fd_limit();
  kfrun::JobSpec spec;
  spec.timeout_seconds = opt.timeout_seconds;
  spec.prefix = opt.prefix;
  // A rank reading a terminal from its own process group would be stopped
  // (SIGTTIN); so rank 0 gets stdin only when it is a file or a pipe (not
  // /dev/null: then rank 0 is like the others, and a remote one is watched).
  spec.stdin_to_rank0 = !::isatty(0) && !stdin_is_dev_null();
  spec.ranks.reserve(places.size());
  std::vector<std::string> own_env;
  for (char** p = environ; p != nullptr && *p != nullptr; ++p) own_env.emplace_back(*p);
  for (const kfrun::RankPlace& place : places) {
    kfrun::RankCommand cmd;
    if (!place.remote) {
      cmd.path = path;
      cmd.argv = opt.command;
      cmd.env = kfrun::build_rank_env(environ, opt.exports, job, place);
    } else {
      // The remote-exec command runs here with kfrun's environment (ssh
      // needs its agent, ip netns exec passes it on); the rank's own
      // variables travel on its command line.
      kfrun::expand_rsh(opt.rsh, place.host, &cmd.argv, &error);
      // Every remote rank but one that reads kfrun's stdin is tied to the
      // connection through its stdin.
      cmd.held_stdin = !(spec.stdin_to_rank0 && place.rank == 0);
      cmd.argv.push_back(
          kfrun::build_remote_command(opt.exports, job, place, opt.command, cwd, cmd.held_stdin));
      cmd.path = rsh_path;
      cmd.env = own_env;
    }
    spec.ranks.push_back(std::move(cmd));
  }
  std::fflush(stdout);
  return kfrun::run_job(spec, handled, original);
}
