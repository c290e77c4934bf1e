// What one process knows about where it runs: its host, the CPUs it may run
// on, their NUMA node, and the GPUs and NICs of the machine. Discovered with
// hwloc when the library is built with it (KF_HAVE_HWLOC), else from /proc and
// /sys with less detail (no PCI locality, GPUs unknown). Every rank encodes its
// own and the communicator exchanges them at init (see JobTopology).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace kf {

// A PCI device of interest (GPU or network interface).
struct TopoDevice {
  std::string name;     // "eth0", "cuda0" / "card0"...
  std::string pci_bus;  // "0000:3b:00.0", or "" when unknown
  int numa_node = -1;   // NUMA node it hangs off, -1 when unknown
  bool operator==(const TopoDevice& o) const {
    return name == o.name && pci_bus == o.pci_bus && numa_node == o.numa_node;
  }
};

struct LocalTopology {
  std::string host_id;      // host_identity(): hostname/boot id
  int numa_node = -1;       // NUMA node of this process's CPUs; -1 if they span several or unknown
  std::vector<int> cpus;    // logical CPUs this process may run on (its affinity), sorted
  int numa_count = 0;       // NUMA nodes of the machine (0 = unknown)
  int core_count = 0;       // physical cores of the machine (logical CPUs when unknown)
  // Logical CPUs of each NUMA node (index = node), empty when unknown. Used by
  // binding; not exchanged (every rank of a host computes the same).
  std::vector<std::vector<int>> numa_cpus;
  std::vector<TopoDevice> gpus;
  std::vector<TopoDevice> nics;
  std::string source;       // "hwloc" or "sysfs": how this was discovered
  bool operator==(const LocalTopology& o) const {
    return host_id == o.host_id && numa_node == o.numa_node && cpus == o.cpus &&
           numa_count == o.numa_count && core_count == o.core_count && gpus == o.gpus &&
           nics == o.nics && source == o.source;
  }
};

// Discovers this process's topology. Fails only when even the CPU affinity
// cannot be read; missing NUMA, GPU or NIC information is left empty.
Status discover_local_topology(LocalTopology* out);
// The same, without hwloc (what a build without hwloc does); for tests.
Status discover_local_topology_sysfs(LocalTopology* out);

// A compact text form with no '|' (rendezvous records are '|'-separated) and
// no newline: "t1;h=<host>;n=<numa>;c=<cpu ranges>;N=..;C=..;s=..;g=..;i=..".
// numa_cpus is not encoded.
std::string encode(const LocalTopology& t);
// Parses encode()'s output; rejects anything malformed with a sentence saying what.
Status decode(const std::string& text, LocalTopology* out);

// "0-3,8,10-11" <-> {0,1,2,3,8,10,11}. parse fails on malformed or huge input.
std::string format_cpu_list(const std::vector<int>& cpus);
Status parse_cpu_list(const std::string& text, std::vector<int>* out);

}  // namespace kf
