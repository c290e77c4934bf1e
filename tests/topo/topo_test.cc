// Unit tests of src/topo: record encoding, job grouping, dumps, binding plans,
// and the discovery fallback without hwloc.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "topo/binding.h"
#include "topo/job_topology.h"
#include "topo/local_topology.h"

namespace kf {
namespace {

LocalTopology sample(const std::string& host, int numa, std::vector<int> cpus) {
  LocalTopology t;
  t.host_id = host;
  t.numa_node = numa;
  t.cpus = std::move(cpus);
  t.numa_count = 2;
  t.core_count = 8;
  t.source = "hwloc";
  t.gpus = {{"cuda0", "0000:3b:00.0", 0}, {"cuda1", "0000:af:00.0", 1}};
  t.nics = {{"mlx5_0", "0000:5e:00.0", 1}, {"eth0", "", -1}};
  return t;
}

std::vector<std::string> encode_all(const std::vector<LocalTopology>& ts) {
  std::vector<std::string> out;
  for (const auto& t : ts) out.push_back(encode(t));
  return out;
}

TEST(TopoEncode, RoundTrip) {
  LocalTopology t = sample("node-a/8c1f-42", 1, {0, 1, 2, 3, 8, 10, 11});
  std::string e = encode(t);
  EXPECT_EQ(e.find('|'), std::string::npos);
  EXPECT_EQ(e.find('\n'), std::string::npos);
  LocalTopology d;
  ASSERT_TRUE(decode(e, &d).is_ok()) << decode(e, &d).message();
  EXPECT_EQ(d, t);
  EXPECT_EQ(format_cpu_list(d.cpus), "0-3,8,10-11");
}

TEST(TopoEncode, EscapesSeparators) {
  LocalTopology t = sample("we|ird;host=,~%/id", -1, {5});
  t.nics = {{"a|b;c", "x~y", 0}};
  t.gpus.clear();
  std::string e = encode(t);
  EXPECT_EQ(e.find('|'), std::string::npos);
  LocalTopology d;
  ASSERT_TRUE(decode(e, &d).is_ok());
  EXPECT_EQ(d, t);
}

TEST(TopoEncode, RejectsMalformed) {
  std::string good = encode(sample("h/1", 0, {0, 1}));
  LocalTopology d;
  ASSERT_TRUE(decode(good, &d).is_ok());
  const std::vector<std::string> bad = {
      "",
      "garbage",
      "t2;h=h;n=0;c=0;N=1;C=1;s=x;g=;i=",        // unknown version
      "t1;h=h;n=0;c=0;N=1;C=1;s=x;g=",           // missing field
      "t1;h=h;n=0;c=0;N=1;C=1;s=x;g=;i=;z=1",    // extra field
      "t1;x=h;n=0;c=0;N=1;C=1;s=x;g=;i=",        // wrong key
      "t1;h=;n=0;c=0;N=1;C=1;s=x;g=;i=",         // empty host
      "t1;h=h;n=abc;c=0;N=1;C=1;s=x;g=;i=",      // bad numa
      "t1;h=h;n=0;c=;N=1;C=1;s=x;g=;i=",         // no cpu
      "t1;h=h;n=0;c=3-1;N=1;C=1;s=x;g=;i=",      // reversed range
      "t1;h=h;n=0;c=0-999999;N=1;C=1;s=x;g=;i=", // huge cpu
      "t1;h=h;n=0;c=0,,1;N=1;C=1;s=x;g=;i=",     // empty list item
      "t1;h=h;n=0;c=0;N=-1;C=1;s=x;g=;i=",       // negative count
      "t1;h=h;n=0;c=0;N=1;C=0;s=x;g=;i=",        // zero cores
      "t1;h=h%zz;n=0;c=0;N=1;C=1;s=x;g=;i=",     // bad escape
      "t1;h=h%4;n=0;c=0;N=1;C=1;s=x;g=;i=",      // truncated escape
      "t1;h=h h;n=0;c=0;N=1;C=1;s=x;g=;i=",      // unescaped space
      "t1;h=h;n=0;c=0;N=1;C=1;s=x;g=cuda0;i=",   // device without fields
      "t1;h=h;n=0;c=0;N=1;C=1;s=x;g=~~0;i=",     // device without name
      "t1;h=h;n=0;c=0;N=1;C=1;s=x;g=;i=e~p~q",   // bad device numa
      good + "|x",
      std::string(5000, 'a'),
  };
  for (const std::string& b : bad) {
    Status st = decode(b, &d);
    EXPECT_FALSE(st.is_ok()) << "accepted: " << b;
    EXPECT_FALSE(st.message().empty());
  }
}

TEST(TopoEncode, CpuLists) {
  std::vector<int> v;
  ASSERT_TRUE(parse_cpu_list("0-2,7,4-5", &v).is_ok());
  EXPECT_EQ(v, (std::vector<int>{0, 1, 2, 4, 5, 7}));
  EXPECT_EQ(format_cpu_list(v), "0-2,4-5,7");
  EXPECT_EQ(format_cpu_list({}), "");
  EXPECT_FALSE(parse_cpu_list("1-", &v).is_ok());
  EXPECT_FALSE(parse_cpu_list("a", &v).is_ok());
}

TEST(JobTopology, TwoHostsTwoRanks) {
  JobTopology j({sample("A", 0, {0}), sample("A", 1, {1}), sample("B", 0, {0}), sample("B", 1, {1})});
  EXPECT_EQ(j.size(), 4);
  EXPECT_EQ(j.host_count(), 2);
  EXPECT_EQ(j.ranks_of_host(0), (std::vector<int>{0, 1}));
  EXPECT_EQ(j.ranks_of_host(1), (std::vector<int>{2, 3}));
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(j.host_of(r), r / 2);
    EXPECT_EQ(j.local_rank(r), r % 2);
    EXPECT_EQ(j.local_size(r), 2);
  }
}

TEST(JobTopology, ThreeHostsTwoRanksFromRecords) {
  std::vector<LocalTopology> ts;
  for (int r = 0; r < 6; ++r) ts.push_back(sample("host" + std::to_string(r / 2), r % 2, {r % 2}));
  JobTopology j;
  ASSERT_TRUE(JobTopology::from_records(encode_all(ts), &j).is_ok());
  EXPECT_EQ(j.host_count(), 3);
  for (int r = 0; r < 6; ++r) {
    EXPECT_EQ(j.host_of(r), r / 2);
    EXPECT_EQ(j.local_rank(r), r % 2);
    EXPECT_EQ(j.local_size(r), 2);
    EXPECT_EQ(j.rank_info(r).numa_node, r % 2);
  }
}

TEST(JobTopology, InterleavedRanks) {
  // Ranks 0,2,4 on X; 1,3 on Y; 5 on Z.
  const char* hosts[] = {"X", "Y", "X", "Y", "X", "Z"};
  std::vector<LocalTopology> ts;
  for (const char* h : hosts) ts.push_back(sample(h, -1, {0}));
  JobTopology j(ts);
  EXPECT_EQ(j.host_count(), 3);
  EXPECT_EQ(j.ranks_of_host(0), (std::vector<int>{0, 2, 4}));
  EXPECT_EQ(j.ranks_of_host(1), (std::vector<int>{1, 3}));
  EXPECT_EQ(j.ranks_of_host(2), (std::vector<int>{5}));
  const int host[] = {0, 1, 0, 1, 0, 2}, local[] = {0, 0, 1, 1, 2, 0}, lsize[] = {3, 2, 3, 2, 3, 1};
  for (int r = 0; r < 6; ++r) {
    EXPECT_EQ(j.host_of(r), host[r]) << r;
    EXPECT_EQ(j.local_rank(r), local[r]) << r;
    EXPECT_EQ(j.local_size(r), lsize[r]) << r;
  }
}

TEST(JobTopology, MalformedRecordNamesRank) {
  std::vector<std::string> recs = encode_all({sample("A", 0, {0}), sample("A", 0, {0})});
  recs[1] = "t1;broken";
  JobTopology j;
  Status st = JobTopology::from_records(recs, &j);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("rank 1"), std::string::npos) << st.message();
}

bool valid_json(const std::string& json) {
  char path[] = "/tmp/kf_topo_test_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return false;
  ssize_t n = write(fd, json.data(), json.size());
  close(fd);
  std::string cmd = std::string("/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
                                "assert d[\"size\"]==len(d[\"ranks\"])' ") + path;
  int rc = std::system(cmd.c_str());
  unlink(path);
  return n == static_cast<ssize_t>(json.size()) && rc == 0;
}

TEST(JobTopology, Dumps) {
  LocalTopology odd = sample("quote\"back\\slash\ttab", 0, {0, 1});
  JobTopology j({sample("A", 0, {0, 1}), sample("A", 1, {2, 3}), odd});
  std::string text = j.to_text();
  EXPECT_NE(text.find("job: 3 ranks on 2 hosts"), std::string::npos) << text;
  EXPECT_NE(text.find("rank 1: local rank 1/2, numa 1, cpus 2-3"), std::string::npos) << text;
  EXPECT_NE(text.find("cuda1 (0000:af:00.0) numa 1"), std::string::npos) << text;
  std::string json = j.to_json();
  EXPECT_NE(json.find("\"host_count\":2"), std::string::npos);
  EXPECT_NE(json.find("\\\"back\\\\slash\\u0009tab"), std::string::npos) << json;
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3 to parse the JSON";
  EXPECT_TRUE(valid_json(json)) << json;
  EXPECT_TRUE(valid_json(JobTopology({sample("solo", -1, {0})}).to_json()));
}

TEST(Binding, Plans) {
  LocalTopology local = sample("A", -1, {0, 1, 2, 3});
  local.numa_cpus = {{0, 1}, {2, 3}};
  JobTopology j({local, local, local});
  BindPlan p;
  ASSERT_TRUE(plan_binding("none", j, 0, local, &p).is_ok());
  EXPECT_FALSE(p.bind);
  EXPECT_FALSE(plan_binding("bogus", j, 0, local, &p).is_ok());

  ASSERT_TRUE(plan_binding("numa-spread", j, 1, local, &p).is_ok());
  EXPECT_TRUE(p.bind);
  EXPECT_EQ(p.numa_node, 1);
  EXPECT_EQ(p.cpus, (std::vector<int>{2, 3}));
  ASSERT_TRUE(plan_binding("numa-spread", j, 2, local, &p).is_ok());
  EXPECT_EQ(p.numa_node, 0);

  ASSERT_TRUE(plan_binding("gpu", j, 1, local, &p).is_ok());  // local rank 1 -> cuda1 on node 1
  EXPECT_EQ(p.numa_node, 1);
  EXPECT_NE(p.reason.find("cuda1"), std::string::npos) << p.reason;
  ASSERT_TRUE(plan_binding("nic", j, 0, local, &p).is_ok());  // only mlx5_0 has a node
  EXPECT_EQ(p.numa_node, 1);

  // Allowed CPUs restrict the node's CPUs.
  local.cpus = {0, 3};
  ASSERT_TRUE(plan_binding("numa-spread", j, 1, local, &p).is_ok());
  EXPECT_EQ(p.cpus, (std::vector<int>{3}));

  // No NUMA information or no placed device: no binding, with a reason.
  LocalTopology bare = sample("A", -1, {0});
  bare.nics = {{"eth0", "", -1}};
  ASSERT_TRUE(plan_binding("numa-spread", j, 0, bare, &p).is_ok());
  EXPECT_FALSE(p.bind);
  bare.numa_cpus = {{0}};
  ASSERT_TRUE(plan_binding("nic", j, 0, bare, &p).is_ok());
  EXPECT_FALSE(p.bind);
  EXPECT_FALSE(p.reason.empty());
}

void expect_sane(const LocalTopology& t) {
  EXPECT_FALSE(t.host_id.empty());
  ASSERT_FALSE(t.cpus.empty());
  EXPECT_GE(t.core_count, 1);
  EXPECT_GE(t.numa_count, 0);
  EXPECT_GE(t.numa_node, -1);
  // What discovery finds must survive the exchange.
  LocalTopology d;
  Status st = decode(encode(t), &d);
  ASSERT_TRUE(st.is_ok()) << st.message() << ": " << encode(t);
  EXPECT_EQ(d, t);
}

TEST(Discover, FallbackWithoutHwloc) {
  LocalTopology t;
  ASSERT_TRUE(discover_local_topology_sysfs(&t).is_ok());
  EXPECT_EQ(t.source, "sysfs");
  expect_sane(t);
  std::printf("sysfs: %s\n", encode(t).c_str());
}

TEST(Discover, Default) {
  LocalTopology t;
  ASSERT_TRUE(discover_local_topology(&t).is_ok());
  expect_sane(t);
  std::printf("default: %s\n", encode(t).c_str());
  // The per-process cache still re-reads the affinity.
  LocalTopology again;
  ASSERT_TRUE(discover_local_topology(&again).is_ok());
  EXPECT_EQ(again, t);
}

}  // namespace
}  // namespace kf

namespace kf {
namespace {

TEST(TopoEncode, OversizedDropsDevices) {
  LocalTopology t = sample("big", -1, {});
  for (int c = 0; c < 1200; c += 2) t.cpus.push_back(c);  // "0,2,4,...": long
  t.nics.clear();
  for (int i = 0; i < 16; ++i) t.nics.push_back({"nic-with-a-rather-long-name-" + std::to_string(i), "0000:00:00.0", 0});
  std::string e = encode(t);
  LocalTopology d;
  ASSERT_TRUE(decode(e, &d).is_ok()) << e.size();
  EXPECT_EQ(d.cpus, t.cpus);
  EXPECT_TRUE(d.nics.empty());
}

}  // namespace
}  // namespace kf
