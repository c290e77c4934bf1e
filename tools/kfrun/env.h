// The environment each rank starts with: kfrun's own environment, the -x
// overrides, then the launcher variables libkungfu reads (KF_RANK, ...).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace kfrun {

// What every rank of one job shares.
struct JobInfo {
  int size = 0;
  std::string root_addr;   // "127.0.0.1:<port>"
  std::string job_secret;  // 32 lowercase hex characters
};

// Finds a TCP port on 127.0.0.1 that is free now (bind port 0, read it,
// close). Rank 0's library listens there; another process could take it in
// between, which the library then reports as a bind error. Returns 0 and sets
// *error on failure.
int find_free_port(std::string* error);

// 16 bytes from /dev/urandom as 32 lowercase hex characters; "" and *error on failure.
std::string make_job_secret(std::string* error);

// The names of the launcher variables; -x must not override them.
bool is_launcher_variable(const std::string& name);

// "NAME=VALUE" strings for rank `rank`: `base` (e.g. environ) with `exports`
// applied in order, then the launcher variables. Later entries replace
// earlier ones, so each name appears once.
std::vector<std::string> build_rank_env(const char* const* base,
                                        const std::vector<std::pair<std::string, std::string>>& exports,
                                        const JobInfo& job, int rank);

}  // namespace kfrun
