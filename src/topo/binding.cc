#include "topo/binding.h"

#include <dirent.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <iterator>

#include "base/config.h"
#include "base/log.h"

namespace kf {
namespace {

// The NUMA nodes that have CPUs, ascending.
std::vector<int> nodes_with_cpus(const LocalTopology& local) {
  std::vector<int> nodes;
  for (size_t n = 0; n < local.numa_cpus.size(); ++n) {
    if (!local.numa_cpus[n].empty()) nodes.push_back(static_cast<int>(n));
  }
  return nodes;
}

// Binds every thread of the process (sched_setaffinity binds one thread only).
Status bind_all_threads(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) {
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &set);
  }
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) {
    if (sched_setaffinity(0, sizeof(set), &set) != 0) return system_error(errno_text("sched_setaffinity", errno));
    return Status::ok();
  }
  Status result;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    pid_t tid = static_cast<pid_t>(std::atoi(e->d_name));
    // A thread may exit meanwhile (ESRCH): not an error.
    if (sched_setaffinity(tid, sizeof(set), &set) != 0 && errno != ESRCH && result.is_ok()) {
      result = system_error(errno_text("sched_setaffinity", errno));
    }
  }
  closedir(d);
  return result;
}

}  // namespace

Status plan_binding(const std::string& mode, const JobTopology& job, int rank,
                    const LocalTopology& local, BindPlan* plan) {
  *plan = BindPlan();
  if (mode == "none" || mode.empty()) {
    plan->reason = "KF_BIND=none";
    return Status::ok();
  }
  if (mode != "numa-spread" && mode != "nic" && mode != "gpu") {
    return invalid_argument("KF_BIND=" + mode + " is not none, numa-spread, nic or gpu");
  }
  if (rank < 0 || rank >= job.size()) return invalid_argument("plan_binding: rank out of range");
  const int local_rank = job.local_rank(rank);
  std::vector<int> nodes = nodes_with_cpus(local);
  if (nodes.empty()) {
    plan->reason = "KF_BIND=" + mode + ": the NUMA layout is unknown here; not binding";
    return Status::ok();
  }
  int node = -1;
  std::string why;
  if (mode == "numa-spread") {
    node = nodes[static_cast<size_t>(local_rank) % nodes.size()];
    why = "local rank " + std::to_string(local_rank) + " of " + std::to_string(nodes.size()) + " NUMA node" +
          (nodes.size() == 1 ? "" : "s");
  } else {
    const std::vector<TopoDevice>& devs = mode == "nic" ? local.nics : local.gpus;
    std::vector<const TopoDevice*> placed;
    for (const TopoDevice& d : devs) {
      if (d.numa_node >= 0 && std::find(nodes.begin(), nodes.end(), d.numa_node) != nodes.end()) {
        placed.push_back(&d);
      }
    }
    if (placed.empty()) {
      plan->reason = "KF_BIND=" + mode + ": no " + (mode == "nic" ? "NIC" : "GPU") +
                     " with a known NUMA node here; not binding";
      return Status::ok();
    }
    const TopoDevice& d = *placed[static_cast<size_t>(local_rank) % placed.size()];
    node = d.numa_node;
    why = "nearest to " + d.name + (d.pci_bus.empty() ? "" : " (" + d.pci_bus + ")");
  }
  const std::vector<int>& node_cpus = local.numa_cpus[static_cast<size_t>(node)];
  // Stay inside what this process may use (cgroups, taskset), when possible.
  std::vector<int> cpus;
  std::set_intersection(node_cpus.begin(), node_cpus.end(), local.cpus.begin(), local.cpus.end(),
                        std::back_inserter(cpus));
  if (cpus.empty()) cpus = node_cpus;
  plan->bind = true;
  plan->numa_node = node;
  plan->cpus = cpus;
  plan->reason = "KF_BIND=" + mode + ": rank " + std::to_string(rank) + " (local rank " +
                 std::to_string(local_rank) + ") bound to NUMA node " + std::to_string(node) + ", cpus " +
                 format_cpu_list(cpus) + ", " + why;
  return Status::ok();
}

Status apply_binding(const JobTopology& job, int rank, const LocalTopology& local) {
  BindPlan plan;
  KF_RETURN_IF_ERROR(plan_binding(knob_string(Knob::KF_BIND), job, rank, local, &plan));
  if (!plan.bind) {
    if (knob_string(Knob::KF_BIND) != "none") KF_LOG_WARN(plan.reason);
    return Status::ok();
  }
  Status st = bind_all_threads(plan.cpus);
  if (!st.is_ok()) return Status(st.code(), plan.reason + " failed: " + st.message());
  KF_LOG_INFO(plan.reason);
  return Status::ok();
}

}  // namespace kf
