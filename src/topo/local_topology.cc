#include "topo/local_topology.h"

#include <dirent.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <set>
#include <utility>

#include "base/host_id.h"
#include "base/log.h"

#ifdef KF_HAVE_HWLOC
#include <hwloc.h>
#endif

namespace kf {
namespace {

// Bounds that keep one encoded topology well inside a rendezvous record.
constexpr size_t kMaxDevices = 16;
constexpr size_t kMaxEncodedBytes = 3072;
constexpr int kMaxCpu = 1 << 16;

std::string read_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  return line;
}

std::vector<std::string> list_dir(const std::string& path) {
  std::vector<std::string> names;
  DIR* d = opendir(path.c_str());
  if (d == nullptr) return names;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

Status affinity(std::vector<int>* cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) {
    return system_error(errno_text("sched_getaffinity", errno));
  }
  cpus->clear();
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus->push_back(c);
  }
  if (cpus->empty()) return system_error("sched_getaffinity returned no CPU");
  return Status::ok();
}

// The NUMA node holding all of `cpus`, or -1.
int node_of(const std::vector<int>& cpus, const std::vector<std::vector<int>>& numa_cpus) {
  for (size_t n = 0; n < numa_cpus.size(); ++n) {
    const auto& node = numa_cpus[n];
    if (node.empty()) continue;
    if (std::includes(node.begin(), node.end(), cpus.begin(), cpus.end())) return static_cast<int>(n);
  }
  return -1;
}

bool is_pci_bus_id(const std::string& s) {
  // dddd:bb:dd.f
  return s.size() == 12 && s[4] == ':' && s[7] == ':' && s[10] == '.';
}

// The PCI bus id ("0000:3b:00.0") a sysfs device link leads to, or "" if it
// is not on PCI. Virtio devices sit one level below their PCI function.
std::string pci_bus_of(const std::string& device_link) {
  char buf[PATH_MAX];
  if (realpath(device_link.c_str(), buf) == nullptr) return "";
  std::string p = buf;
  if (p.find("/pci") == std::string::npos) return "";
  for (int up = 0; up < 2 && !p.empty(); ++up) {
    size_t slash = p.rfind('/');
    if (slash == std::string::npos) break;
    std::string base = p.substr(slash + 1);
    if (is_pci_bus_id(base)) return base;
    p.resize(slash);
  }
  return "";
}

// The device directory of a PCI function (numa_node lives there, not in a
// virtio child).
std::string pci_dir_of(const std::string& device_link) {
  char buf[PATH_MAX];
  if (realpath(device_link.c_str(), buf) == nullptr) return device_link;
  std::string p = buf;
  std::string base = p.substr(p.rfind('/') + 1);
  return is_pci_bus_id(base) ? p : p.substr(0, p.rfind('/'));
}

int sysfs_numa_of(const std::string& device_dir) {
  std::string v = read_line(device_dir + "/numa_node");
  if (v.empty()) return -1;
  char* end = nullptr;
  long n = std::strtol(v.c_str(), &end, 10);
  return (*end == '\0' && n >= 0 && n < kMaxCpu) ? static_cast<int>(n) : -1;
}

void sysfs_numa(LocalTopology* t) {
  t->numa_cpus.clear();
  for (const std::string& name : list_dir("/sys/devices/system/node")) {
    if (name.compare(0, 4, "node") != 0 || !all_digits(name.substr(4))) continue;
    int id = std::atoi(name.c_str() + 4);
    if (id < 0 || id >= kMaxCpu) continue;
    std::vector<int> cpus;
    if (!parse_cpu_list(read_line("/sys/devices/system/node/" + name + "/cpulist"), &cpus).is_ok()) continue;
    if (t->numa_cpus.size() <= static_cast<size_t>(id)) t->numa_cpus.resize(static_cast<size_t>(id) + 1);
    t->numa_cpus[static_cast<size_t>(id)] = cpus;
    ++t->numa_count;
  }
}

void sysfs_cores(LocalTopology* t) {
  std::set<std::pair<std::string, std::string>> cores;
  int logical = 0;
  for (const std::string& name : list_dir("/sys/devices/system/cpu")) {
    if (name.compare(0, 3, "cpu") != 0 || !all_digits(name.substr(3))) continue;
    ++logical;
    std::string dir = "/sys/devices/system/cpu/" + name + "/topology/";
    std::string pkg = read_line(dir + "physical_package_id");
    std::string core = read_line(dir + "core_id");
    if (!core.empty()) cores.insert({pkg, core});
  }
  if (!cores.empty()) {
    t->core_count = static_cast<int>(cores.size());
  } else {
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    t->core_count = online > 0 ? static_cast<int>(online) : std::max(logical, 1);
  }
}

void sysfs_devices(LocalTopology* t) {
  for (const std::string& name : list_dir("/sys/class/net")) {
    std::string dev = "/sys/class/net/" + name + "/device";
    std::string bus = pci_bus_of(dev);
    if (bus.empty()) continue;  // virtual interfaces (lo, veth, bridges) have no PCI device
    if (t->nics.size() < kMaxDevices) t->nics.push_back({name, bus, sysfs_numa_of(pci_dir_of(dev))});
  }
  for (const std::string& name : list_dir("/sys/class/drm")) {
    // cardN only (not cardN-HDMI-A-1 connectors, not renderD nodes of the same device).
    if (name.compare(0, 4, "card") != 0 || !all_digits(name.substr(4))) continue;
    std::string dev = "/sys/class/drm/" + name + "/device";
    std::string cls = read_line(dev + "/class");  // 0x03xxxx: display controller
    std::string bus = pci_bus_of(dev);
    if (bus.empty() || cls.compare(0, 4, "0x03") != 0) continue;
    if (t->gpus.size() < kMaxDevices) t->gpus.push_back({name, bus, sysfs_numa_of(pci_dir_of(dev))});
  }
}

#ifdef KF_HAVE_HWLOC
std::vector<int> bitmap_cpus(hwloc_const_bitmap_t set) {
  std::vector<int> cpus;
  for (int i = hwloc_bitmap_first(set); i >= 0 && i < kMaxCpu; i = hwloc_bitmap_next(set, i)) {
    cpus.push_back(i);
  }
  return cpus;
}

std::string pci_bus_text(hwloc_obj_t pci) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%04x:%02x:%02x.%01x", pci->attr->pcidev.domain,
                pci->attr->pcidev.bus, pci->attr->pcidev.dev, pci->attr->pcidev.func);
  return buf;
}

Status hwloc_discover(LocalTopology* t) {
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) return system_error("hwloc_topology_init failed");
  struct Closer {
    hwloc_topology_t t;
    ~Closer() { hwloc_topology_destroy(t); }
  } closer{topo};
  hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (hwloc_topology_load(topo) != 0) return system_error(errno_text("hwloc_topology_load", errno));

  t->numa_cpus.clear();
  t->numa_count = 0;
  int nodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
  for (int i = 0; i < nodes; ++i) {
    hwloc_obj_t node = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i));
    if (node == nullptr || node->os_index >= static_cast<unsigned>(kMaxCpu)) continue;
    size_t id = node->os_index;
    if (t->numa_cpus.size() <= id) t->numa_cpus.resize(id + 1);
    if (node->cpuset != nullptr) t->numa_cpus[id] = bitmap_cpus(node->cpuset);
    ++t->numa_count;
  }
  int cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
  if (cores <= 0) cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
  t->core_count = std::max(cores, 1);

  for (hwloc_obj_t os = hwloc_get_next_osdev(topo, nullptr); os != nullptr;
       os = hwloc_get_next_osdev(topo, os)) {
    auto type = os->attr->osdev.type;
    bool nic = type == HWLOC_OBJ_OSDEV_NETWORK || type == HWLOC_OBJ_OSDEV_OPENFABRICS;
    bool gpu = type == HWLOC_OBJ_OSDEV_GPU || type == HWLOC_OBJ_OSDEV_COPROC;
    if ((!nic && !gpu) || os->name == nullptr) continue;
    TopoDevice d;
    d.name = os->name;
    for (hwloc_obj_t p = os->parent; p != nullptr; p = p->parent) {
      if (p->type == HWLOC_OBJ_PCI_DEVICE) {
        d.pci_bus = pci_bus_text(p);
        break;
      }
    }
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo, os);
    if (anc != nullptr && anc->nodeset != nullptr && hwloc_bitmap_weight(anc->nodeset) == 1) {
      d.numa_node = hwloc_bitmap_first(anc->nodeset);
    }
    auto& list = nic ? t->nics : t->gpus;
    // One GPU shows up as several OS devices (card0, renderD128, cuda0): keep
    // one entry per PCI function, preferring the CUDA name.
    auto same = std::find_if(list.begin(), list.end(), [&](const TopoDevice& x) {
      return !d.pci_bus.empty() && x.pci_bus == d.pci_bus;
    });
    if (same != list.end()) {
      if (type == HWLOC_OBJ_OSDEV_COPROC) same->name = d.name;
      continue;
    }
    if (list.size() < kMaxDevices) list.push_back(d);
  }
  return Status::ok();
}
#endif

bool safe_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == ':' || c == '/' || c == '-';
}

std::string escape(const std::string& s) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (char c : s) {
    if (safe_char(c)) {
      out += c;
    } else {
      unsigned char u = static_cast<unsigned char>(c);
      out += '%';
      out += hex[u >> 4];
      out += hex[u & 15];
    }
  }
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool unescape(const std::string& s, std::string* out) {
  out->clear();
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%') {
      if (i + 2 >= s.size()) return false;
      int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
      if (hi < 0 || lo < 0) return false;
      *out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else if (safe_char(s[i])) {
      *out += s[i];
    } else {
      return false;
    }
  }
  return true;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    parts.push_back(s.substr(start, pos == std::string::npos ? std::string::npos : pos - start));
    if (pos == std::string::npos) break;
    start = pos + 1;
  }
  return parts;
}

bool parse_int(const std::string& s, int lo, int hi, int* out) {
  if (s.empty() || s.size() > 7) return false;
  size_t i = 0;
  bool neg = s[0] == '-';
  if (neg) i = 1;
  if (i == s.size()) return false;
  long v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  if (neg) v = -v;
  if (v < lo || v > hi) return false;
  *out = static_cast<int>(v);
  return true;
}

std::string encode_devices(const std::vector<TopoDevice>& devs) {
  std::string out;
  for (size_t i = 0; i < devs.size() && i < kMaxDevices; ++i) {
    if (i > 0) out += ',';
    out += escape(devs[i].name) + "~" + escape(devs[i].pci_bus) + "~" + std::to_string(devs[i].numa_node);
  }
  return out;
}

Status decode_devices(const std::string& text, const char* what, std::vector<TopoDevice>* out) {
  out->clear();
  if (text.empty()) return Status::ok();
  std::vector<std::string> items = split(text, ',');
  if (items.size() > kMaxDevices) {
    return invalid_argument(std::string("topology record lists more than 16 ") + what);
  }
  for (const std::string& item : items) {
    std::vector<std::string> f = split(item, '~');
    TopoDevice d;
    if (f.size() != 3 || !unescape(f[0], &d.name) || d.name.empty() || !unescape(f[1], &d.pci_bus) ||
        !parse_int(f[2], -1, kMaxCpu, &d.numa_node)) {
      return invalid_argument(std::string("malformed ") + what + " entry '" + item + "' in topology record");
    }
    out->push_back(d);
  }
  return Status::ok();
}

}  // namespace

std::string format_cpu_list(const std::vector<int>& cpus) {
  std::string out;
  size_t i = 0;
  while (i < cpus.size()) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

Status parse_cpu_list(const std::string& text, std::vector<int>* out) {
  out->clear();
  if (text.empty()) return Status::ok();
  std::set<int> seen;
  for (const std::string& part : split(text, ',')) {
    size_t dash = part.find('-');
    int lo = 0, hi = 0;
    bool ok = dash == std::string::npos
                  ? parse_int(part, 0, kMaxCpu - 1, &lo) && (hi = lo, true)
                  : parse_int(part.substr(0, dash), 0, kMaxCpu - 1, &lo) &&
                        parse_int(part.substr(dash + 1), 0, kMaxCpu - 1, &hi) && lo <= hi;
    if (!ok) return invalid_argument("malformed CPU list '" + text + "'");
    for (int c = lo; c <= hi; ++c) seen.insert(c);
  }
  out->assign(seen.begin(), seen.end());
  return Status::ok();
}

Status discover_local_topology_sysfs(LocalTopology* out) {
  LocalTopology t;
  t.host_id = host_identity();
  t.source = "sysfs";
  KF_RETURN_IF_ERROR(affinity(&t.cpus));
  sysfs_numa(&t);
  sysfs_cores(&t);
  sysfs_devices(&t);
  // With one NUMA node every device is local to it (as hwloc reports it); the
  // kernel says -1 there.
  if (t.numa_count == 1) {
    int only = static_cast<int>(t.numa_cpus.size()) - 1;
    for (auto* list : {&t.gpus, &t.nics}) {
      for (TopoDevice& d : *list) {
        if (d.numa_node < 0) d.numa_node = only;
      }
    }
  }
  t.numa_node = node_of(t.cpus, t.numa_cpus);
  *out = std::move(t);
  return Status::ok();
}

Status discover_local_topology(LocalTopology* out) {
  // The machine does not change while the process runs: discover it once
  // (hwloc takes tens of milliseconds) and re-read only the affinity, which
  // binding may change.
  static std::mutex mu;
  static bool done = false;
  static LocalTopology machine;
  std::lock_guard<std::mutex> lock(mu);
  if (!done) {
    Status st = Status::ok();
#ifdef KF_HAVE_HWLOC
    machine.host_id = host_identity();
    machine.source = "hwloc";
    st = hwloc_discover(&machine);
    if (!st.is_ok()) KF_LOG_WARN("hwloc topology discovery failed, using /proc and /sys: " + st.message());
#else
    st = not_supported("built without hwloc");
#endif
    if (!st.is_ok()) {
      machine = LocalTopology();
      KF_RETURN_IF_ERROR(discover_local_topology_sysfs(&machine));
    }
    done = true;
  }
  LocalTopology t = machine;
  Status st = affinity(&t.cpus);
  if (!st.is_ok()) {
    // Unusual (seccomp?): assume every online CPU rather than fail init.
    KF_LOG_WARN("cannot read the CPU affinity, assuming all CPUs: " + st.message());
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    t.cpus.clear();
    for (long c = 0; c < std::max(n, 1L) && c < kMaxCpu; ++c) t.cpus.push_back(static_cast<int>(c));
  }
  t.numa_node = node_of(t.cpus, t.numa_cpus);
  *out = std::move(t);
  return Status::ok();
}

std::string encode(const LocalTopology& t) {
  std::string head = "t1;h=" + escape(t.host_id) + ";n=" + std::to_string(t.numa_node) +
                     ";c=" + format_cpu_list(t.cpus) + ";N=" + std::to_string(t.numa_count) +
                     ";C=" + std::to_string(t.core_count) + ";s=" + escape(t.source);
  std::string s = head + ";g=" + encode_devices(t.gpus) + ";i=" + encode_devices(t.nics);
  // Keep within what decode() accepts (and a rendezvous record holds): the
  // device lists go first, they matter least.
  if (s.size() > kMaxEncodedBytes) s = head + ";g=;i=";
  return s;
}

Status decode(const std::string& text, LocalTopology* out) {
  if (text.size() > kMaxEncodedBytes) return invalid_argument("topology record is too long");
  std::vector<std::string> fields = split(text, ';');
  static const char* const keys[] = {"t1", "h=", "n=", "c=", "N=", "C=", "s=", "g=", "i="};
  if (fields.size() != sizeof(keys) / sizeof(keys[0])) {
    return invalid_argument("topology record has " + std::to_string(fields.size()) +
                            " fields, expected 9: '" + text.substr(0, 80) + "'");
  }
  if (fields[0] != "t1") return invalid_argument("topology record has unknown version '" + fields[0] + "'");
  for (size_t i = 1; i < fields.size(); ++i) {
    if (fields[i].compare(0, 2, keys[i]) != 0) {
      return invalid_argument(std::string("topology record field ") + std::to_string(i) +
                              " does not start with '" + keys[i] + "'");
    }
    fields[i] = fields[i].substr(2);
  }
  LocalTopology t;
  if (!unescape(fields[1], &t.host_id) || t.host_id.empty()) {
    return invalid_argument("topology record has a malformed host id");
  }
  if (!parse_int(fields[2], -1, kMaxCpu, &t.numa_node)) return invalid_argument("topology record has a malformed NUMA node");
  KF_RETURN_IF_ERROR(parse_cpu_list(fields[3], &t.cpus));
  if (t.cpus.empty()) return invalid_argument("topology record has no CPU");
  if (!parse_int(fields[4], 0, kMaxCpu, &t.numa_count)) return invalid_argument("topology record has a malformed NUMA count");
  if (!parse_int(fields[5], 1, kMaxCpu, &t.core_count)) return invalid_argument("topology record has a malformed core count");
  if (!unescape(fields[6], &t.source)) return invalid_argument("topology record has a malformed source");
  KF_RETURN_IF_ERROR(decode_devices(fields[7], "GPU", &t.gpus));
  KF_RETURN_IF_ERROR(decode_devices(fields[8], "NIC", &t.nics));
  *out = std::move(t);
  return Status::ok();
}

}  // namespace kf
