#include "topo/job_topology.h"

#include <map>
#include <utility>

#include "base/json.h"

namespace kf {
namespace {

// Host identities, sources and device names come from the system. With every
// byte from 0x7f up escaped, the dump is ASCII and valid JSON whatever they hold.
std::string json_string(const std::string& s) {
  return json_quote(s, JsonNonAscii::kEscape);
}

std::string json_ints(const std::vector<int>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + std::to_string(v[i]);
  return out + "]";
}

std::string json_devices(const std::vector<TopoDevice>& devs) {
  std::string out = "[";
  for (size_t i = 0; i < devs.size(); ++i) {
    if (i) out += ",";
    out += "{\"name\":" + json_string(devs[i].name) + ",\"pci_bus\":" + json_string(devs[i].pci_bus) +
           ",\"numa_node\":" + std::to_string(devs[i].numa_node) + "}";
  }
  return out + "]";
}

std::string text_devices(const std::vector<TopoDevice>& devs) {
  if (devs.empty()) return "none";
  std::string out;
  for (size_t i = 0; i < devs.size(); ++i) {
    if (i) out += ", ";
    out += devs[i].name;
    if (!devs[i].pci_bus.empty()) out += " (" + devs[i].pci_bus + ")";
    if (devs[i].numa_node >= 0) out += " numa " + std::to_string(devs[i].numa_node);
  }
  return out;
}

}  // namespace

JobTopology::JobTopology(std::vector<LocalTopology> ranks) : ranks_(std::move(ranks)) {
  std::map<std::string, int> host_index;
  host_of_.resize(ranks_.size());
  local_rank_.resize(ranks_.size());
  for (size_t r = 0; r < ranks_.size(); ++r) {
    auto it = host_index.find(ranks_[r].host_id);
    if (it == host_index.end()) {
      it = host_index.emplace(ranks_[r].host_id, static_cast<int>(hosts_.size())).first;
      hosts_.emplace_back();
    }
    auto& members = hosts_[static_cast<size_t>(it->second)];
    host_of_[r] = it->second;
    local_rank_[r] = static_cast<int>(members.size());
    members.push_back(static_cast<int>(r));
  }
}

Status JobTopology::from_records(const std::vector<std::string>& encoded, JobTopology* out) {
  std::vector<LocalTopology> ranks(encoded.size());
  for (size_t r = 0; r < encoded.size(); ++r) {
    Status st = decode(encoded[r], &ranks[r]);
    if (!st.is_ok()) return Status(st.code(), "rank " + std::to_string(r) + ": " + st.message());
  }
  *out = JobTopology(std::move(ranks));
  return Status::ok();
}

std::string JobTopology::to_text() const {
  std::string out = "job: " + std::to_string(size()) + " rank" + (size() == 1 ? "" : "s") + " on " +
                    std::to_string(host_count()) + " host" + (host_count() == 1 ? "" : "s") + "\n";
  for (int h = 0; h < host_count(); ++h) {
    const LocalTopology& first = rank_info(ranks_of_host(h).front());
    out += "host " + std::to_string(h) + ": " + first.host_id + "\n";
    out += "  numa nodes " + std::to_string(first.numa_count) + ", cores " +
           std::to_string(first.core_count) + ", discovered by " + first.source + "\n";
    out += "  gpus: " + text_devices(first.gpus) + "\n";
    out += "  nics: " + text_devices(first.nics) + "\n";
    for (int r : ranks_of_host(h)) {
      const LocalTopology& t = rank_info(r);
      out += "  rank " + std::to_string(r) + ": local rank " + std::to_string(local_rank(r)) + "/" +
             std::to_string(local_size(r)) + ", numa " +
             (t.numa_node >= 0 ? std::to_string(t.numa_node) : std::string("-")) + ", cpus " +
             format_cpu_list(t.cpus) + "\n";
    }
  }
  return out;
}

std::string JobTopology::to_json() const {
  std::string out = "{\"size\":" + std::to_string(size()) + ",\"host_count\":" +
                    std::to_string(host_count()) + ",\"hosts\":[";
  for (int h = 0; h < host_count(); ++h) {
    const LocalTopology& first = rank_info(ranks_of_host(h).front());
    if (h) out += ",";
    out += "{\"index\":" + std::to_string(h) + ",\"host_id\":" + json_string(first.host_id) +
           ",\"numa_count\":" + std::to_string(first.numa_count) +
           ",\"core_count\":" + std::to_string(first.core_count) +
           ",\"source\":" + json_string(first.source) + ",\"gpus\":" + json_devices(first.gpus) +
           ",\"nics\":" + json_devices(first.nics) + ",\"ranks\":" + json_ints(ranks_of_host(h)) + "}";
  }
  out += "],\"ranks\":[";
  for (int r = 0; r < size(); ++r) {
    const LocalTopology& t = rank_info(r);
    if (r) out += ",";
    out += "{\"rank\":" + std::to_string(r) + ",\"host\":" + std::to_string(host_of(r)) +
           ",\"local_rank\":" + std::to_string(local_rank(r)) +
           ",\"local_size\":" + std::to_string(local_size(r)) +
           ",\"numa_node\":" + std::to_string(t.numa_node) + ",\"cpus\":" + json_ints(t.cpus) + "}";
  }
  return out + "]}\n";
}

}  // namespace kf
