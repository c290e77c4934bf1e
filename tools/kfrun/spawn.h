// Starting one rank: pipes for its stdout and stderr, fork, and in the child
// the set-up that must happen before exec (own process group, death signal
// tied to kfrun, signal state restored, standard descriptors).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace kfrun {

// Finds the program as execvp would: a name with a '/' is used as is, else
// each directory of PATH is tried. Returns 0 and sets *path, or returns the
// shell's exit code (127 not found, 126 found but not executable) and sets
// *error to a sentence.
int resolve_program(const std::string& name, std::string* path, std::string* error);

struct SpawnRequest {
  int rank = 0;
  std::string path;               // resolved program
  std::vector<std::string> argv;  // argv[0] as the user wrote it
  std::vector<std::string> env;   // "NAME=VALUE"
  bool inherit_stdin = false;     // else the rank reads /dev/null, or:
  // Its stdin a pipe that kfrun holds open and never writes: it reads end of
  // file only once kfrun closes it or dies, however (SIGKILL too). A remote
  // rank's watcher reads it (see build_remote_command).
  bool held_stdin = false;
  sigset_t child_mask;            // signal mask the program starts with
};

struct SpawnResult {
  pid_t pid = -1;    // > 0 when a child process exists (it must be reaped)
  int out_fd = -1;   // read ends (non-blocking, close-on-exec)
  int err_fd = -1;
  int stdin_fd = -1;   // held_stdin: the write end (close-on-exec); close it when the rank exits
  int exec_errno = 0;  // != 0: the child exists but could not exec
  std::string error;   // set when pid <= 0 (no child) or exec failed
};

SpawnResult spawn_rank(const SpawnRequest& req);

}  // namespace kfrun
