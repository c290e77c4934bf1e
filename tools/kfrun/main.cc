// kfrun: starts N local ranks of a program with the environment libkungfu
// reads, forwards their output line by line with a "[rank] " prefix, and
// makes sure that when the job ends, for whatever reason, no rank is left.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <string>

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

// Two pipe ends per rank: allow as many descriptors as the hard limit does.
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

  std::string error;
  std::string path;
  int code = kfrun::resolve_program(opt.command[0], &path, &error);
  if (code != 0) {
    error_line(error);
    return code;
  }
  for (const auto& [name, value] : opt.exports) {
    if (kfrun::is_launcher_variable(name)) {
      error_line("-x " + name + ": kfrun sets " + name + " itself; ignoring -x");
    }
  }

  kfrun::JobInfo job;
  job.size = opt.np;
  int port = kfrun::find_free_port(&error);
  if (port == 0) {
    error_line("cannot find a free port on 127.0.0.1: " + error);
    return kExitLauncherError;
  }
  job.root_addr = "127.0.0.1:" + std::to_string(port);
  job.job_secret = kfrun::make_job_secret(&error);
  if (job.job_secret.empty()) {
    error_line("cannot make the job secret: " + error);
    return kExitLauncherError;
  }

  raise_fd_limit();
  kfrun::JobSpec spec;
  spec.path = path;
  spec.argv = opt.command;
  spec.timeout_seconds = opt.timeout_seconds;
  spec.prefix = opt.prefix;
  // A rank reading a terminal from its own process group would be stopped
  // (SIGTTIN); so rank 0 gets stdin only when it is a file or a pipe.
  spec.stdin_to_rank0 = !::isatty(0);
  spec.env.reserve(static_cast<size_t>(opt.np));
  for (int r = 0; r < opt.np; ++r) {
    spec.env.push_back(kfrun::build_rank_env(environ, opt.exports, job, r));
  }
  std::fflush(stdout);
  return kfrun::run_job(spec, handled, original);
}
