// CPU binding of a rank (the KF_BIND knob), applied once at init after the
// topology exchange. The choice (plan_binding) is separate from the system
// calls (apply_binding) so that it can be tested on synthetic topologies.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "topo/job_topology.h"
#include "topo/local_topology.h"

namespace kf {

struct BindPlan {
  bool bind = false;      // false: leave the affinity as it is
  int numa_node = -1;     // the node chosen
  std::vector<int> cpus;  // the CPUs to bind to (when bind)
  std::string reason;     // one sentence: what was chosen and why (or why not)
};

// Chooses the CPUs of `rank` for `mode` ("none", "numa-spread", "nic", "gpu").
// `local` is this rank's own discovery (it carries the CPUs of every NUMA
// node, which the exchanged records do not). Fails on an unknown mode; a mode
// that cannot apply here (no NUMA information, no NIC with a known node) is a
// plan with bind == false and the reason.
Status plan_binding(const std::string& mode, const JobTopology& job, int rank,
                    const LocalTopology& local, BindPlan* plan);

// Reads KF_BIND, plans and binds every thread of this process. Logs what it
// did; the caller only warns on failure.
Status apply_binding(const JobTopology& job, int rank, const LocalTopology& local);

}  // namespace kf
