#include "monitor/trace.h"

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>

#include "base/config.h"
#include "base/json.h"
#include "base/log.h"

namespace kf {
namespace {

// A small per-thread number for the "tid" field: readable in the viewer,
// unlike pthread ids, and stable for the life of the thread.
int thread_number() {
  static std::atomic<int> next{1};
  thread_local int mine = next.fetch_add(1, std::memory_order_relaxed);
  return mine;
}

std::string hex_id(uint64_t id) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%" PRIx64, id);
  return buf;
}

// The common head of every event: "name", "ph", "ts", "pid", "tid".
std::string head(const std::string& name, const char* ph, double ts, int rank) {
  char buf[96];
  std::snprintf(buf, sizeof buf, ",\"ph\":\"%s\",\"ts\":%.3f,\"pid\":%d,\"tid\":%d", ph, ts, rank,
                thread_number());
  return "{\"name\":" + json_quote(name) + buf;
}

}  // namespace

std::string Tracer::path_for(const std::string& prefix, int rank, const std::string& comm_name) {
  std::string middle;
  if (comm_name != "world") {
    middle = "." + comm_name;
    for (size_t i = 1; i < middle.size(); ++i) {
      const char c = middle[i];
      const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                         (c >= '0' && c <= '9') || c == '-' || c == '_';
      if (!plain) middle[i] = '_';
    }
  }
  return prefix + middle + ".rank" + std::to_string(rank) + ".json";
}

std::unique_ptr<Tracer> Tracer::from_env(int rank, const std::string& comm_name) {
  const std::string prefix = knob_string(Knob::KF_TIMELINE);
  if (prefix.empty()) return nullptr;
  TraceOptions o;
  o.path = path_for(prefix, rank, comm_name);
  o.rank = rank;
  const int64_t events = knob_int(Knob::KF_TIMELINE_MAX_EVENTS);
  const int64_t bytes = knob_int(Knob::KF_TIMELINE_MAX_BYTES);
  o.max_events = events > 0 ? static_cast<uint64_t>(events) : 0;
  o.max_bytes = bytes > 0 ? static_cast<uint64_t>(bytes) : 0;
  return std::make_unique<Tracer>(std::move(o));
}

Tracer::Tracer(TraceOptions opts) : opts_(std::move(opts)), t0_(std::chrono::steady_clock::now()) {
  // Process and thread names first, so they survive any later dropping.
  std::lock_guard<std::mutex> lock(mu_);
  append_locked("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + std::to_string(opts_.rank) +
                ",\"tid\":0,\"args\":{\"name\":\"rank " + std::to_string(opts_.rank) + "\"}}");
}

Tracer::~Tracer() {
  const Status s = close();
  if (!s.is_ok()) KF_LOG_WARN("timeline: " + s.message());
}

double Tracer::now_us() const {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0_).count();
}

void Tracer::append_locked(const std::string& event) {
  // The bound covers the separator too, so the file never exceeds
  // max_bytes plus the fixed header and trailer.
  if (closed_ || recorded_ >= opts_.max_events ||
      events_.size() + event.size() + 1 > opts_.max_bytes) {
    ++dropped_;
    return;
  }
  if (!events_.empty()) events_ += ',';
  events_ += event;
  ++recorded_;
}

void Tracer::submit(uint64_t id, const std::string& name, int priority, uint64_t bytes) {
  const double ts = now_us();
  std::string e = head("submit " + name, "i", ts, opts_.rank);
  e += ",\"s\":\"t\",\"args\":{\"op\":" + json_quote(name) + ",\"id\":\"" + hex_id(id) +
       "\",\"priority\":" + std::to_string(priority) + ",\"bytes\":" + std::to_string(bytes) + "}}";
  std::lock_guard<std::mutex> lock(mu_);
  append_locked(e);
}

void Tracer::start(uint64_t id, const std::string& name, int priority, uint64_t bytes) {
  const double ts = now_us();
  std::string e = head(name, "b", ts, opts_.rank);
  e += ",\"cat\":\"op\",\"id\":\"" + hex_id(id) + "\",\"args\":{\"priority\":" +
       std::to_string(priority) + ",\"bytes\":" + std::to_string(bytes) + "}}";
  std::lock_guard<std::mutex> lock(mu_);
  append_locked(e);
}

// Chunks get their own async id (op id and chunk index), so chunks of one
// operation that overlap in time need not nest and still display correctly.
void Tracer::chunk_begin(uint64_t id, const std::string& name, uint32_t chunk, uint64_t bytes) {
  const double ts = now_us();
  std::string e = head(name + " #" + std::to_string(chunk), "b", ts, opts_.rank);
  e += ",\"cat\":\"chunk\",\"id\":\"" + hex_id(id) + "." + std::to_string(chunk) +
       "\",\"args\":{\"chunk\":" + std::to_string(chunk) + ",\"bytes\":" + std::to_string(bytes) +
       "}}";
  std::lock_guard<std::mutex> lock(mu_);
  append_locked(e);
}

void Tracer::chunk_end(uint64_t id, const std::string& name, uint32_t chunk) {
  const double ts = now_us();
  std::string e = head(name + " #" + std::to_string(chunk), "e", ts, opts_.rank);
  e += ",\"cat\":\"chunk\",\"id\":\"" + hex_id(id) + "." + std::to_string(chunk) + "\"}";
  std::lock_guard<std::mutex> lock(mu_);
  append_locked(e);
}

void Tracer::finish(uint64_t id, const std::string& name, const char* status) {
  const double ts = now_us();
  std::string e = head(name, "e", ts, opts_.rank);
  e += ",\"cat\":\"op\",\"id\":\"" + hex_id(id) +
       "\",\"args\":{\"status\":" + json_quote(status ? status : "") + "}}";
  std::lock_guard<std::mutex> lock(mu_);
  append_locked(e);
}

void Tracer::instant(const std::string& name, const std::string& args_json) {
  const double ts = now_us();
  std::string e = head(name, "i", ts, opts_.rank);
  e += ",\"s\":\"p\"";
  if (!args_json.empty()) e += ",\"args\":" + args_json;
  e += "}";
  std::lock_guard<std::mutex> lock(mu_);
  append_locked(e);
}

uint64_t Tracer::recorded() const {
  std::lock_guard<std::mutex> lock(mu_);
  return recorded_;
}

uint64_t Tracer::dropped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

Status Tracer::close() {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return close_status_;
  closed_ = true;
  std::FILE* f = std::fopen(opts_.path.c_str(), "w");
  if (!f) {
    close_status_ = system_error(errno_text(("cannot write " + opts_.path).c_str(), errno));
    return close_status_;
  }
  const std::string tail = "],\"displayTimeUnit\":\"ms\",\"otherData\":{\"rank\":" +
                           std::to_string(opts_.rank) +
                           ",\"recorded_events\":" + std::to_string(recorded_) +
                           ",\"dropped_events\":" + std::to_string(dropped_) + "}}\n";
  bool ok = std::fputs("{\"traceEvents\":[", f) >= 0;
  ok = ok && std::fwrite(events_.data(), 1, events_.size(), f) == events_.size();
  ok = ok && std::fputs(tail.c_str(), f) >= 0;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) close_status_ = system_error("timeline: writing " + opts_.path + " failed");
  if (dropped_ > 0) {
    KF_LOG_WARN("timeline: " + std::to_string(dropped_) + " events dropped (limit " +
                std::to_string(opts_.max_events) + " events / " +
                std::to_string(opts_.max_bytes) + " bytes); see KF_TIMELINE_MAX_*");
  }
  std::string().swap(events_);
  return close_status_;
}

}  // namespace kf
