// The engine-event adapter: a sequence of AsyncEvents (as the engine emits
// them) becomes a balanced timeline: submit, one op slice from the first
// partition start to finish, a slice per partition; ids agree across ranks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "json_reader.h"
#include "monitor/trace_observer.h"

namespace {

kf::AsyncEvent ev(kf::AsyncEvent::Type type, const std::string* name, uint32_t partition,
                  uint64_t bytes, int status = KF_SUCCESS) {
  kf::AsyncEvent e{};
  e.type = type;
  e.name = name;
  e.seq = 5;
  e.partition = partition;
  e.partitions = 2;
  e.priority = 3;
  e.bytes = bytes;
  e.status = status;
  return e;
}

kftest::Json read_events(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  kftest::Json doc;
  kftest::JsonReader r(text);
  EXPECT_TRUE(r.parse(&doc)) << r.error();
  return doc.at("traceEvents");
}

TEST(TraceObserver, EngineEventsBecomeBalancedSlices) {
  kf::TraceOptions o;
  o.path = "/tmp/kf_trace_obs_" + std::to_string(getpid()) + ".json";
  auto tracer = std::make_shared<kf::Tracer>(o);
  kf::TraceObserver obs(tracer);
  const std::string a = "grad.fc6", b = "grad.bad";
  using T = kf::AsyncEvent::Type;
  obs(ev(T::kSubmit, &a, 0, 8192));
  obs(ev(T::kStart, &a, 0, 4096));
  obs(ev(T::kStart, &a, 1, 4096));  // overlapping partitions
  obs(ev(T::kPartitionDone, &a, 0, 4096));
  obs(ev(T::kPartitionDone, &a, 1, 4096));
  obs(ev(T::kFinish, &a, 0, 8192));
  obs(ev(T::kSubmit, &b, 0, 16));
  obs(ev(T::kFinish, &b, 0, 16, KF_ERR_INVALID_USAGE));  // never started
  ASSERT_TRUE(tracer->close().is_ok());

  const kftest::Json evs = read_events(o.path);
  int begins = 0, ends = 0, op_begins = 0;
  std::string bad_status;
  for (const auto& e : evs.items) {
    const std::string ph = e.at("ph").str;
    if (ph == "b") ++begins, op_begins += e.at("cat").str == "op";
    if (ph == "e") ++ends;
    if (ph == "e" && e.at("name").str == b) bad_status = e.at("args").at("status").str;
  }
  EXPECT_EQ(begins, ends);  // every slice is closed
  EXPECT_EQ(begins, 4);     // two ops + two partitions
  EXPECT_EQ(op_begins, 2);
  EXPECT_FALSE(bad_status.empty());
  EXPECT_NE(bad_status, "ok");
  unlink(o.path.c_str());
}

TEST(TraceObserver, OpIdsAreStableAndDistinct) {
  EXPECT_EQ(kf::TraceObserver::op_id("x", 1), kf::TraceObserver::op_id("x", 1));
  EXPECT_NE(kf::TraceObserver::op_id("x", 1), kf::TraceObserver::op_id("x", 2));
  EXPECT_NE(kf::TraceObserver::op_id("x", 1), kf::TraceObserver::op_id("y", 1));
}

}  // namespace
