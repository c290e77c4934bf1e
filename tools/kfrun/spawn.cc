#include "kfrun/spawn.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace kfrun {
namespace {

std::string sys_error(const std::string& what, int err) { return what + ": " + std::strerror(err); }

bool is_executable_file(const std::string& path, int* err) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    *err = errno;
    return false;
  }
  if (S_ISDIR(st.st_mode)) {
    *err = EISDIR;
    return false;
  }
  if (::access(path.c_str(), X_OK) != 0) {
    *err = errno;
    return false;
  }
  return true;
}

void close_pair(int fds[2]) {
  if (fds[0] >= 0) ::close(fds[0]);
  if (fds[1] >= 0) ::close(fds[1]);
  fds[0] = fds[1] = -1;
}

// The child between fork and exec. Only system calls here: no allocation,
// no locks, and _exit on any failure.
[[noreturn]] void run_child(const SpawnRequest& req, pid_t parent, int in_r, int out_w, int err_w,
                            int status_w, char* const* argv, char* const* envp) {
  // Its own process group, so kfrun can signal the rank together with any
  // children it starts, and a terminal's Ctrl-C reaches only kfrun (which
  // forwards it once, instead of every rank receiving it twice).
  ::setpgid(0, 0);
  // Die with kfrun, even when kfrun is SIGKILLed. If kfrun died before the
  // prctl, the parent is already someone else and no signal would come.
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) ::_exit(127);

  // kfrun ignores SIGPIPE and blocks the signals it handles; ignored
  // dispositions and the mask survive exec, so put them back.
  ::signal(SIGPIPE, SIG_DFL);
  ::sigprocmask(SIG_SETMASK, &req.child_mask, nullptr);

  if (req.held_stdin) {
    if (::dup2(in_r, 0) < 0) {  // (above 2, as the output pipes below)
      int err = errno;
      (void)!::write(status_w, &err, sizeof(err));
      ::_exit(127);
    }
  } else if (!req.inherit_stdin) {
    int null_fd = ::open("/dev/null", O_RDONLY);
    if (null_fd >= 0 && null_fd != 0) {
      ::dup2(null_fd, 0);
      ::close(null_fd);
    }
  }
  // kfrun keeps 0..2 open, so the pipe ends are above 2 and dup2 gives
  // descriptors without close-on-exec.
  if (::dup2(out_w, 1) < 0 || ::dup2(err_w, 2) < 0) {
    int err = errno;
    (void)!::write(status_w, &err, sizeof(err));
    ::_exit(127);
  }
  ::execve(req.path.c_str(), argv, envp);
  int err = errno;
  (void)!::write(status_w, &err, sizeof(err));
  ::_exit(err == ENOENT || err == ENOTDIR ? 127 : 126);
}

}  // namespace

int resolve_program(const std::string& name, std::string* path, std::string* error) {
  if (name.empty()) {
    *error = "the program name is empty";
    return 127;
  }
  int err = 0;
  if (name.find('/') != std::string::npos) {
    if (is_executable_file(name, &err)) {
      *path = name;
      return 0;
    }
    *error = sys_error("cannot execute " + name, err);
    return (err == ENOENT || err == ENOTDIR) ? 127 : 126;
  }
  const char* env_path = std::getenv("PATH");
  std::string dirs = env_path != nullptr ? env_path : "/usr/local/bin:/usr/bin:/bin";
  bool found_not_executable = false;
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t colon = dirs.find(':', start);
    if (colon == std::string::npos) colon = dirs.size();
    std::string dir = dirs.substr(start, colon - start);
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
    if (is_executable_file(candidate, &err)) {
      *path = candidate;
      return 0;
    }
    if (err == EACCES) found_not_executable = true;
    start = colon + 1;
  }
  if (found_not_executable) {
    *error = "cannot execute " + name + ": permission denied";
    return 126;
  }
  *error = name + ": command not found";
  return 127;
}

SpawnResult spawn_rank(const SpawnRequest& req) {
  SpawnResult res;
  int out_pipe[2] = {-1, -1};
  int err_pipe[2] = {-1, -1};
  int status_pipe[2] = {-1, -1};  // close-on-exec: EOF means exec succeeded
  int in_pipe[2] = {-1, -1};      // held_stdin only
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0 ||
      ::pipe2(status_pipe, O_CLOEXEC) != 0 ||
      (req.held_stdin && ::pipe2(in_pipe, O_CLOEXEC) != 0)) {
    res.error = sys_error("rank " + std::to_string(req.rank) + ": cannot create pipes", errno);
    close_pair(out_pipe);
    close_pair(err_pipe);
    close_pair(status_pipe);
    close_pair(in_pipe);
    return res;
  }

  // Everything the child needs is built before fork.
  std::vector<char*> argv;
  for (const std::string& a : req.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& e : req.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  pid_t parent = ::getpid();

  pid_t pid = ::fork();
  if (pid < 0) {
    res.error = sys_error("rank " + std::to_string(req.rank) + ": fork", errno);
    close_pair(out_pipe);
    close_pair(err_pipe);
    close_pair(status_pipe);
    close_pair(in_pipe);
    return res;
  }
  if (pid == 0) {
    run_child(req, parent, in_pipe[0], out_pipe[1], err_pipe[1], status_pipe[1], argv.data(),
              envp.data());
  }

  // Also here, so the group exists before kfrun may signal it. EACCES after
  // the child's exec is harmless: the child did it first.
  ::setpgid(pid, pid);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  ::close(status_pipe[1]);
  if (in_pipe[0] >= 0) ::close(in_pipe[0]);
  res.stdin_fd = in_pipe[1];
  res.pid = pid;
  res.out_fd = out_pipe[0];
  res.err_fd = err_pipe[0];
  ::fcntl(res.out_fd, F_SETFL, O_NONBLOCK);
  ::fcntl(res.err_fd, F_SETFL, O_NONBLOCK);

  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(status_pipe[0], &child_errno, sizeof(child_errno));
  } while (n < 0 && errno == EINTR);
  ::close(status_pipe[0]);
  if (n == static_cast<ssize_t>(sizeof(child_errno))) {
    res.exec_errno = child_errno;
    res.error = sys_error("rank " + std::to_string(req.rank) + ": cannot execute " + req.path, child_errno);
  }
  return res;
}

}  // namespace kfrun
