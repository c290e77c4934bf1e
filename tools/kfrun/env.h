// The environment each rank starts with: kfrun's own environment, the -x
// overrides, then the launcher variables libkungfu reads (KF_RANK, ...).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "kfrun/args.h"

namespace kfrun {

// What every rank of one job shares.
struct JobInfo {
  int size = 0;
  std::string root_addr;   // "host:port", e.g. "127.0.0.1:<port>"
  std::string job_secret;  // 32 lowercase hex characters
};

// Where one rank runs.
struct RankPlace {
  int rank = 0;
  int local_rank = 0;   // among the ranks of its host
  int local_size = 1;
  bool remote = false;  // started through the remote-exec template
  std::string host;     // as given in the host list; "" without one
};

// Ranks 0..np-1 filled into `hosts` in order (each up to its slots);
// local[i] tells whether hosts[i] is this host. All local hosts count as one
// host for KF_LOCAL_*. Without hosts every rank is local. The caller makes
// sure np does not exceed the slots.
std::vector<RankPlace> place_ranks(const std::vector<HostSlots>& hosts, const std::vector<bool>& local,
                                   int np);

// Whether `host` names this machine: localhost, a 127.x.x.x address, this
// host's name (full or short), or an address (or a name resolving to one)
// of a local interface.
bool is_local_host(const std::string& host);

// KF_ROOT_ADDR for the placed hosts: "127.0.0.1:port" when every rank is
// local; else the first host's IPv4 address (resolved here; the name as
// given when it does not resolve here), or, when the first
// host is this one, the local address of the route towards the first remote
// host (learnt from a UDP socket's connect, which sends nothing). The port
// is free-now for a local root, random in 20000..32767 for a remote one.
// "" and *error on failure.
std::string choose_root_addr(const std::vector<RankPlace>& places, std::string* error);

// Finds a TCP port on the local IPv4 address `ip` that is free now (bind
// port 0, read it, close). Rank 0's library listens there; another process
// could take it in between, which the library then reports as a bind error.
// Returns 0 and sets *error on failure.
int find_free_port(const std::string& ip, std::string* error);

// 16 bytes from /dev/urandom as 32 lowercase hex characters; "" and *error on failure.
std::string make_job_secret(std::string* error);

// The names of the launcher variables; -x must not override them.
bool is_launcher_variable(const std::string& name);

// "NAME=VALUE" strings for a local rank: `base` (e.g. environ) with
// `exports` applied in order, then the launcher variables. Later entries
// replace earlier ones, so each name appears once.
std::vector<std::string> build_rank_env(const char* const* base,
                                        const std::vector<std::pair<std::string, std::string>>& exports,
                                        const JobInfo& job, const RankPlace& place);

// `text` quoted for a POSIX shell: as is when it has only safe characters,
// else in single quotes.
std::string shell_quote(const std::string& text);

// The shell command line that starts a remote rank (the last argument of
// the remote-exec command): "cd CWD 2>/dev/null; exec env VAR=VAL... prog
// args", with the -x exports (not kfrun's whole environment, which belongs
// to this host) and the launcher variables, everything quoted. With
// `watch_stdin` (every remote rank but one reading kfrun's stdin), "exec sh
// -c SCRIPT kf-rank CWD env ...": SCRIPT changes to CWD, starts a watcher
// of its stdin when that is a pipe or a socket (held open by kfrun: see
// SpawnRequest::held_stdin) that ends the rank's process group at end of
// file (SIGTERM, then SIGKILL 3 s later), and execs the env command.
std::string build_remote_command(const std::vector<std::pair<std::string, std::string>>& exports,
                                 const JobInfo& job, const RankPlace& place,
                                 const std::vector<std::string>& command, const std::string& cwd,
                                 bool watch_stdin);

}  // namespace kfrun
