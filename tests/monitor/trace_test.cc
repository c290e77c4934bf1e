// Timeline writer: the file parses back as JSON in the Chrome trace format,
// carries every event kind with its fields, stays within its bounds and
// counts what it dropped, and survives concurrent writers.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "json_reader.h"
#include "monitor/trace.h"

namespace {

using kftest::Json;

std::string temp_prefix(const char* tag) {
  return "/tmp/kf_trace_test_" + std::to_string(getpid()) + "_" + tag;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Json parse_file(const std::string& path, std::string* text = nullptr) {
  std::string body = slurp(path);
  Json doc;
  kftest::JsonReader reader(body);
  EXPECT_TRUE(reader.parse(&doc)) << reader.error() << " in " << path;
  if (text) *text = body;
  return doc;
}

TEST(Trace, PathForRank) {
  EXPECT_EQ(kf::Tracer::path_for("/tmp/x", 3), "/tmp/x.rank3.json");
  EXPECT_EQ(kf::Tracer::path_for("/tmp/x", 3, "world"), "/tmp/x.rank3.json");
  // A split child's ranks must not overwrite the world's files; its name
  // ("parent/label<color>") becomes one path component.
  EXPECT_EQ(kf::Tracer::path_for("/tmp/x", 1, "world/host0"), "/tmp/x.world_host0.rank1.json");
  EXPECT_EQ(kf::Tracer::path_for("/tmp/x", 0, "world/split-1/cross2"),
            "/tmp/x.world_split-1_cross2.rank0.json");
  EXPECT_EQ(kf::Tracer::path_for("t", 0, "a b.c"), "t.a_b_c.rank0.json");
}

TEST(Trace, OffWhenKnobUnset) {
  unsetenv("KF_TIMELINE");
  EXPECT_EQ(kf::Tracer::from_env(0), nullptr);
  setenv("KF_TIMELINE", "", 1);
  EXPECT_EQ(kf::Tracer::from_env(0), nullptr);
  unsetenv("KF_TIMELINE");
}

TEST(Trace, AllEventKindsRoundTrip) {
  const std::string prefix = temp_prefix("kinds");
  setenv("KF_TIMELINE", prefix.c_str(), 1);
  auto t = kf::Tracer::from_env(2);
  unsetenv("KF_TIMELINE");
  ASSERT_NE(t, nullptr);
  const std::string path = kf::Tracer::path_for(prefix, 2);
  EXPECT_EQ(t->path(), path);
  // A name with characters JSON must escape.
  const std::string name = "layer\"7\\grad\n";
  t->submit(42, name, 7, 4096);
  t->start(42, name, 7, 4096);
  t->chunk_begin(42, name, 0, 2048);
  t->chunk_end(42, name, 0);
  t->chunk_begin(42, name, 1, 2048);
  t->chunk_end(42, name, 1);
  t->finish(42, name, "ok");
  t->instant("tune", "{\"partition\":1048576}");
  ASSERT_TRUE(t->close().is_ok());
  t.reset();

  Json doc = parse_file(path);
  ASSERT_EQ(doc.kind, Json::kObject);
  const Json& ev = doc.at("traceEvents");
  ASSERT_EQ(ev.kind, Json::kArray);
  ASSERT_EQ(ev.items.size(), 9u);  // process name + 8
  EXPECT_EQ(ev.items[0].at("ph").str, "M");
  EXPECT_EQ(ev.items[0].at("args").at("name").str, "rank 2");
  std::vector<std::string> phases;
  double last_ts = -1;
  for (size_t i = 1; i < ev.items.size(); ++i) {
    const Json& e = ev.items[i];
    phases.push_back(e.at("ph").str);
    EXPECT_EQ(e.at("pid").number, 2);
    EXPECT_GE(e.at("ts").number, last_ts);
    last_ts = e.at("ts").number;
  }
  EXPECT_EQ(phases, (std::vector<std::string>{"i", "b", "b", "e", "b", "e", "e", "i"}));
  EXPECT_EQ(ev.items[1].at("args").at("op").str, name);
  EXPECT_EQ(ev.items[1].at("args").at("priority").number, 7);
  EXPECT_EQ(ev.items[1].at("args").at("bytes").number, 4096);
  EXPECT_EQ(ev.items[2].at("name").str, name);
  EXPECT_EQ(ev.items[2].at("cat").str, "op");
  EXPECT_EQ(ev.items[2].at("id").str, "0x2a");
  EXPECT_EQ(ev.items[3].at("args").at("bytes").number, 2048);
  EXPECT_EQ(ev.items[3].at("id").str, "0x2a.0");
  EXPECT_EQ(ev.items[5].at("id").str, "0x2a.1");
  EXPECT_EQ(ev.items[7].at("args").at("status").str, "ok");
  EXPECT_EQ(ev.items[8].at("args").at("partition").number, 1048576);
  EXPECT_EQ(doc.at("otherData").at("dropped_events").number, 0);
  EXPECT_EQ(doc.at("otherData").at("recorded_events").number, 9);
  unlink(path.c_str());
}

TEST(Trace, BoundedByEventCount) {
  kf::TraceOptions o;
  o.path = temp_prefix("count") + ".json";
  o.max_events = 50;
  kf::Tracer t(o);
  for (int i = 0; i < 1000; ++i) t.submit(i, "op", i, 8);
  EXPECT_EQ(t.recorded(), 50u);
  EXPECT_EQ(t.dropped(), 951u);  // 1000 submits + process name - 50 kept
  ASSERT_TRUE(t.close().is_ok());
  Json doc = parse_file(o.path);
  EXPECT_EQ(doc.at("traceEvents").items.size(), 50u);
  EXPECT_EQ(doc.at("otherData").at("dropped_events").number, 951);
  unlink(o.path.c_str());
}

TEST(Trace, BoundedByBytes) {
  kf::TraceOptions o;
  o.path = temp_prefix("bytes") + ".json";
  o.max_bytes = 10000;
  kf::Tracer t(o);
  for (int i = 0; i < 1000; ++i) t.chunk_begin(i, "a_long_operation_name", i, 1 << 20);
  ASSERT_TRUE(t.close().is_ok());
  std::string text;
  Json doc = parse_file(o.path, &text);
  // Header and trailer add less than 200 bytes to the bounded event list.
  EXPECT_LE(text.size(), o.max_bytes + 200);
  EXPECT_GT(t.dropped(), 0u);
  EXPECT_EQ(doc.at("traceEvents").items.size() + t.dropped(), 1001u);
  EXPECT_EQ(doc.at("otherData").at("dropped_events").number, static_cast<double>(t.dropped()));
  unlink(o.path.c_str());
}

TEST(Trace, ConcurrentWritersKeepFileWellFormed) {
  kf::TraceOptions o;
  o.path = temp_prefix("threads") + ".json";
  o.max_events = 3000;
  kf::Tracer t(o);
  std::vector<std::thread> threads;
  for (int th = 0; th < 4; ++th) {
    threads.emplace_back([&t, th] {
      for (int i = 0; i < 500; ++i) {
        const uint64_t id = (static_cast<uint64_t>(th) << 32) | static_cast<uint64_t>(i);
        const std::string name = "t" + std::to_string(th) + "op" + std::to_string(i);
        t.submit(id, name, i, 64);
        t.start(id, name, i, 64);
        t.finish(id, name, "ok");
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(t.recorded(), 3000u);
  EXPECT_EQ(t.recorded() + t.dropped(), 6001u);
  ASSERT_TRUE(t.close().is_ok());
  Json doc = parse_file(o.path);
  const auto& items = doc.at("traceEvents").items;
  ASSERT_EQ(items.size(), 3000u);
  std::set<double> tids;
  for (const auto& e : items) tids.insert(e.at("tid").number);
  EXPECT_GE(tids.size(), 2u);  // events carry their writer thread
  unlink(o.path.c_str());
}

TEST(Trace, EventsAfterCloseAreDroppedAndCloseIsIdempotent) {
  kf::TraceOptions o;
  o.path = temp_prefix("close") + ".json";
  kf::Tracer t(o);
  t.submit(1, "x", 0, 8);
  ASSERT_TRUE(t.close().is_ok());
  t.submit(2, "y", 0, 8);
  EXPECT_EQ(t.dropped(), 1u);
  EXPECT_TRUE(t.close().is_ok());
  Json doc = parse_file(o.path);
  EXPECT_EQ(doc.at("traceEvents").items.size(), 2u);
  unlink(o.path.c_str());
}

TEST(Trace, UnwritablePathIsAnErrorNotACrash) {
  kf::TraceOptions o;
  o.path = "/nonexistent_dir_kf/trace.json";
  kf::Tracer t(o);
  t.submit(1, "x", 0, 8);
  const kf::Status s = t.close();
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("/nonexistent_dir_kf/trace.json"), std::string::npos);
}

}  // namespace
