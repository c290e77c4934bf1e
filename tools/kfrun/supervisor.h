// The job supervisor: starts the ranks, forwards their output, watches for
// exits, signals and the timeout, stops every rank when one fails, and
// reaps them all before returning kfrun's exit code.
#pragma once

#include <signal.h>

#include <string>
#include <vector>

namespace kfrun {

// What kfrun executes for one rank: the program itself, or for a remote
// rank the remote-exec command that starts it there.
struct RankCommand {
  std::string path;               // resolved program
  std::vector<std::string> argv;  // argv[0] as given
  std::vector<std::string> env;   // "NAME=VALUE"
  bool held_stdin = false;        // a remote rank: see SpawnRequest::held_stdin
};

struct JobSpec {
  std::vector<RankCommand> ranks;             // one per rank, in rank order
  double timeout_seconds = 0;                 // 0: none
  bool prefix = true;
  bool stdin_to_rank0 = false;
};

// Seconds between the polite signal and SIGKILL.
constexpr int kGraceSeconds = 3;

// Runs the job and returns kfrun's exit code. `handled` (SIGCHLD and those
// of SIGINT, SIGTERM, SIGHUP that kfrun forwards) must be blocked in the
// calling thread: they are read from a signalfd. `child_mask` is the mask the
// ranks start with.
int run_job(const JobSpec& spec, const sigset_t& handled, const sigset_t& child_mask);

}  // namespace kfrun
