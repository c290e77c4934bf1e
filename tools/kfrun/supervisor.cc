#include "kfrun/supervisor.h"

#include <poll.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>

#include "kfrun/output.h"
#include "kfrun/spawn.h"

namespace kfrun {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kExitTimeout = 124;
constexpr int kExitLauncherError = 1;
// After the last rank exits, how long to wait for processes it left behind
// (and which are then SIGKILLed) to close the output pipes.
constexpr auto kDrainTime = std::chrono::seconds(1);

// Own table rather than sigabbrev_np, which needs glibc 2.32 (clusters often
// run older ones).
std::string signal_name(int sig) {
  switch (sig) {
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGILL: return "SIGILL";
    case SIGTRAP: return "SIGTRAP";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGUSR1: return "SIGUSR1";
    case SIGSEGV: return "SIGSEGV";
    case SIGUSR2: return "SIGUSR2";
    case SIGPIPE: return "SIGPIPE";
    case SIGALRM: return "SIGALRM";
    case SIGTERM: return "SIGTERM";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    case SIGSYS: return "SIGSYS";
    default: return "signal " + std::to_string(sig);
  }
}

struct Rank {
  int index = 0;
  pid_t pid = -1;          // > 0 once started; also the process group id
  bool exited = false;     // exit seen
  bool reaped = false;     // exit status collected (no zombie left)
  int out_fd = -1;
  int err_fd = -1;
  int stdin_fd = -1;  // held open until the rank exits (SpawnRequest::held_stdin)
  std::unique_ptr<LineForwarder> out;
  std::unique_ptr<LineForwarder> err;
};

// Closes the rank's held stdin (SpawnRequest::held_stdin), if it has one.
void close_held_stdin(Rank& r) {
  if (r.stdin_fd >= 0) ::close(r.stdin_fd);
  r.stdin_fd = -1;
}

class Supervisor {
 public:
  Supervisor(const JobSpec& spec, const sigset_t& handled, const sigset_t& child_mask)
      : spec_(spec), handled_(handled), child_mask_(child_mask), stdout_(1), stderr_(2) {}

  int run();

 private:
  enum class Reason { kNone, kFailure, kSignal, kTimeout, kLauncherError };

  void start_ranks();
  void handle_signals();
  void check_exits();
  void read_output(Rank& r, bool is_err);
  void close_stream(Rank& r, bool is_err);
  void stop(Reason reason, int exit_code, const std::string& message, int sig);
  void signal_all(int sig);
  void reap(Rank& r);
  void reap_all();
  bool all_exited() const;
  bool any_stream_open() const;
  void say(const std::string& line) { stderr_.write_all("kfrun: " + line + "\n"); }

  const JobSpec& spec_;
  sigset_t handled_;
  sigset_t child_mask_;
  Sink stdout_;
  Sink stderr_;
  int signal_fd_ = -1;
  std::vector<Rank> ranks_;

  Reason reason_ = Reason::kNone;
  int exit_code_ = 0;
  std::optional<Clock::time_point> kill_at_;     // SIGKILL everyone then
  std::optional<Clock::time_point> timeout_at_;  // --timeout
  std::optional<Clock::time_point> drain_until_;
  bool killed_ = false;
};

int Supervisor::run() {
  signal_fd_ = ::signalfd(-1, &handled_, SFD_CLOEXEC | SFD_NONBLOCK);
  if (signal_fd_ < 0) {
    say(std::string("signalfd: ") + std::strerror(errno));
    return kExitLauncherError;
  }
  if (spec_.timeout_seconds > 0) {
    timeout_at_ = Clock::now() + std::chrono::milliseconds(
                                     static_cast<int64_t>(std::ceil(spec_.timeout_seconds * 1000)));
  }
  start_ranks();

  std::vector<pollfd> fds;
  std::vector<std::pair<Rank*, bool>> owners;  // rank and is-stderr of fds[1..]
  for (;;) {
    if (all_exited()) {
      if (!drain_until_) {
        // Nothing may outlive the job: processes a rank left behind in its
        // group would otherwise keep the pipes open (and kfrun waiting).
        signal_all(SIGKILL);
        killed_ = true;
        drain_until_ = Clock::now() + kDrainTime;
      }
      if (!any_stream_open() || Clock::now() >= *drain_until_) break;
    }

    Clock::time_point now = Clock::now();
    if (timeout_at_ && now >= *timeout_at_ && reason_ == Reason::kNone) {
      char secs[32];
      std::snprintf(secs, sizeof(secs), "%g", spec_.timeout_seconds);
      stop(Reason::kTimeout, kExitTimeout,
           std::string("timeout: the job did not finish within ") + secs + " s; stopping all ranks",
           SIGTERM);
    }
    if (kill_at_ && now >= *kill_at_ && !killed_) {
      say("ranks still running " + std::to_string(kGraceSeconds) + " s after being told to stop; sending SIGKILL");
      signal_all(SIGKILL);
      killed_ = true;
    }

    // Sleep until the next deadline at most.
    std::optional<Clock::time_point> wake;
    auto consider = [&](const std::optional<Clock::time_point>& t, bool active) {
      if (t && active && (!wake || *t < *wake)) wake = t;
    };
    consider(timeout_at_, reason_ == Reason::kNone);
    consider(kill_at_, !killed_);
    consider(drain_until_, true);
    int timeout_ms = -1;
    if (wake) {
      auto ms = std::chrono::ceil<std::chrono::milliseconds>(*wake - Clock::now()).count();
      timeout_ms = static_cast<int>(std::clamp<int64_t>(ms, 0, 60000));
    }

    fds.clear();
    owners.clear();
    fds.push_back({signal_fd_, POLLIN, 0});
    for (Rank& r : ranks_) {
      if (r.out_fd >= 0) {
        fds.push_back({r.out_fd, POLLIN, 0});
        owners.emplace_back(&r, false);
      }
      if (r.err_fd >= 0) {
        fds.push_back({r.err_fd, POLLIN, 0});
        owners.emplace_back(&r, true);
      }
    }
    int n = ::poll(fds.data(), fds.size(), timeout_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      say(std::string("poll: ") + std::strerror(errno));
      stop(Reason::kLauncherError, kExitLauncherError, "stopping all ranks", SIGKILL);
      break;
    }
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents != 0) read_output(*owners[i - 1].first, owners[i - 1].second);
    }
    if (fds[0].revents != 0) handle_signals();
  }

  reap_all();
  for (Rank& r : ranks_) {
    close_stream(r, false);
    close_stream(r, true);
    close_held_stdin(r);
  }
  ::close(signal_fd_);
  return exit_code_;
}

void Supervisor::start_ranks() {
  ranks_.resize(spec_.ranks.size());
  for (size_t i = 0; i < ranks_.size(); ++i) {
    Rank& r = ranks_[i];
    r.index = static_cast<int>(i);
    std::string prefix = spec_.prefix ? "[" + std::to_string(i) + "] " : "";
    r.out = std::make_unique<LineForwarder>(&stdout_, prefix);
    r.err = std::make_unique<LineForwarder>(&stderr_, prefix);
  }
  for (Rank& r : ranks_) {
    SpawnRequest req;
    req.rank = r.index;
    const RankCommand& cmd = spec_.ranks[static_cast<size_t>(r.index)];
    req.path = cmd.path;
    req.argv = cmd.argv;
    req.env = cmd.env;
    req.inherit_stdin = spec_.stdin_to_rank0 && r.index == 0;
    req.held_stdin = cmd.held_stdin;  // (never the rank given kfrun's stdin: main.cc)
    req.child_mask = child_mask_;
    SpawnResult res = spawn_rank(req);
    r.pid = res.pid;
    r.out_fd = res.out_fd;
    r.err_fd = res.err_fd;
    r.stdin_fd = res.stdin_fd;
    if (res.pid <= 0) {
      r.exited = true;  // never started
      stop(Reason::kLauncherError, kExitLauncherError, res.error + "; stopping all ranks", SIGTERM);
      break;
    }
    if (res.exec_errno != 0) {
      int code = (res.exec_errno == ENOENT || res.exec_errno == ENOTDIR) ? 127 : 126;
      stop(Reason::kFailure, code, res.error + "; stopping all ranks", SIGTERM);
      break;
    }
  }
  // Ranks after a failed start are never started.
  for (Rank& r : ranks_) {
    if (r.pid <= 0) r.exited = true;
  }
}

void Supervisor::handle_signals() {
  signalfd_siginfo info;
  bool child = false;
  for (;;) {
    ssize_t n = ::read(signal_fd_, &info, sizeof(info));
    if (n != static_cast<ssize_t>(sizeof(info))) break;
    int sig = static_cast<int>(info.ssi_signo);
    if (sig == SIGCHLD) {
      child = true;
      continue;
    }
    if (reason_ == Reason::kNone) {
      stop(Reason::kSignal, 128 + sig,
           "received " + signal_name(sig) + "; forwarding it to all ranks", sig);
    } else if (!killed_) {
      // Asked again while stopping: do not wait out the grace period.
      say("received " + signal_name(sig) + " again; sending SIGKILL to all ranks");
      signal_all(SIGKILL);
      killed_ = true;
    }
  }
  if (child) check_exits();
}

void Supervisor::check_exits() {
  for (Rank& r : ranks_) {
    if (r.exited) continue;
    siginfo_t info;
    std::memset(&info, 0, sizeof(info));
    // WNOWAIT keeps the zombie: its pid, and so its process group id, cannot
    // be reused by an unrelated process while kfrun may still signal it.
    // Failed ranks stay zombies until the job has been stopped.
    if (::waitid(P_PID, static_cast<id_t>(r.pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) continue;
    if (info.si_pid == 0) continue;  // still running
    r.exited = true;
    close_held_stdin(r);  // what the rank left on its host reads end of file
    int code = 0;
    std::string how;
    if (info.si_code == CLD_EXITED) {
      code = info.si_status;
      how = "exited with code " + std::to_string(code);
    } else {
      code = 128 + info.si_status;
      how = "was killed by " + signal_name(info.si_status) + " (" + ::strsignal(info.si_status) + ")";
    }
    if (code == 0 && reason_ == Reason::kNone) {
      // A rank that finished well while the job goes on (an elastic job may
      // shrink) is reaped now, so it does not linger as <defunct>.
      reap(r);
    } else if (reason_ == Reason::kNone) {
      bool others = std::any_of(ranks_.begin(), ranks_.end(), [](const Rank& o) { return !o.exited; });
      stop(Reason::kFailure, code,
           "rank " + std::to_string(r.index) + " " + how + (others ? "; stopping the other ranks" : ""),
           SIGTERM);
    }
  }
}

void Supervisor::read_output(Rank& r, bool is_err) {
  int fd = is_err ? r.err_fd : r.out_fd;
  if (fd < 0) return;
  char buf[65536];
  ssize_t n = ::read(fd, buf, sizeof(buf));
  if (n > 0) {
    (is_err ? r.err : r.out)->feed(buf, static_cast<size_t>(n));
  } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
    close_stream(r, is_err);
  }
}

void Supervisor::close_stream(Rank& r, bool is_err) {
  int& fd = is_err ? r.err_fd : r.out_fd;
  if (fd < 0) return;
  (is_err ? r.err : r.out)->finish();
  ::close(fd);
  fd = -1;
}

void Supervisor::stop(Reason reason, int exit_code, const std::string& message, int sig) {
  if (reason_ != Reason::kNone) return;
  reason_ = reason;
  exit_code_ = exit_code;
  say(message);
  signal_all(sig);
  if (sig == SIGKILL) {
    killed_ = true;
  } else {
    kill_at_ = Clock::now() + std::chrono::seconds(kGraceSeconds);
  }
}

void Supervisor::signal_all(int sig) {
  // The whole group of each rank, so processes a rank started go too. An
  // unreaped rank (running or zombie) holds its pid, so the group id is
  // still its own. A reaped rank's group is signalled only while its pipes
  // are open: then a process it started still holds them, and in the usual
  // case still belongs to the group, which keeps the id from being reused.
  for (const Rank& r : ranks_) {
    if (r.pid <= 0) continue;
    if (!r.reaped || r.out_fd >= 0 || r.err_fd >= 0) ::kill(-r.pid, sig);
  }
}

void Supervisor::reap(Rank& r) {
  if (r.pid <= 0 || r.reaped) return;
  int status;
  while (::waitpid(r.pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.reaped = true;
}

void Supervisor::reap_all() {
  for (Rank& r : ranks_) {
    if (r.pid > 0 && !r.exited) ::kill(-r.pid, SIGKILL);  // only after a launcher error
    reap(r);
  }
}

bool Supervisor::all_exited() const {
  return std::all_of(ranks_.begin(), ranks_.end(), [](const Rank& r) { return r.exited; });
}

bool Supervisor::any_stream_open() const {
  return std::any_of(ranks_.begin(), ranks_.end(),
                     [](const Rank& r) { return r.out_fd >= 0 || r.err_fd >= 0; });
}

}  // namespace

int run_job(const JobSpec& spec, const sigset_t& handled, const sigset_t& child_mask) {
  Supervisor s(spec, handled, child_mask);
  return s.run();
}

}  // namespace kfrun
