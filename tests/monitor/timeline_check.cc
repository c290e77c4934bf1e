// timeline_check PREFIX NP [MIN_OPS [MIN_OVERLAP]]: checks the timeline
// files a real run wrote (PREFIX.rank<N>.json for N < NP): each parses as
// JSON, names its rank, has balanced begin/end slices, at least MIN_OPS
// finished operations all with status "ok", and the same operation ids on
// every rank. With MIN_OVERLAP, some rank also had at least that many
// partitions (chunk slices) running at once.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "json_reader.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: timeline_check PREFIX NP [MIN_OPS [MIN_OVERLAP]]\n");
    return 2;
  }
  const std::string prefix = argv[1];
  const int np = std::atoi(argv[2]);
  const long min_ops = argc > 3 ? std::atol(argv[3]) : 1;
  const long min_overlap = argc > 4 ? std::atol(argv[4]) : 0;
  long most_overlap = 0;  // over all ranks
  std::set<std::string> ids0;
  int bad = 0;
  for (int r = 0; r < np; ++r) {
    const std::string path = prefix + ".rank" + std::to_string(r) + ".json";
    std::ifstream in(path);
    if (!in) {
      std::printf("FAIL: %s missing\n", path.c_str());
      ++bad;
      continue;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    kftest::Json doc;
    kftest::JsonReader reader(text);
    if (!reader.parse(&doc)) {
      std::printf("FAIL: %s: %s\n", path.c_str(), reader.error().c_str());
      ++bad;
      continue;
    }
    std::map<std::string, int> open;  // cat/id -> begins - ends
    long finished = 0, failed = 0;
    std::set<std::string> ids;
    // Partition slices as (time, +1 begin / -1 end); at one time stamp ends
    // count first, so back-to-back partitions do not read as overlapping.
    std::vector<std::pair<double, int>> chunk_edges;
    for (const auto& e : doc.at("traceEvents").items) {
      const std::string ph = e.at("ph").str;
      if ((ph == "b" || ph == "e") && e.at("cat").str == "chunk") {
        chunk_edges.emplace_back(e.at("ts").number, ph == "b" ? 1 : -1);
      }
      if (static_cast<int>(e.at("pid").number) != r) ++bad, std::printf("FAIL: pid != rank\n");
      if (ph == "b" || ph == "e") {
        const std::string key = e.at("cat").str + "/" + e.at("id").str;
        open[key] += ph == "b" ? 1 : -1;
        if (ph == "e" && e.at("cat").str == "op") {
          ++finished;
          ids.insert(e.at("id").str);
          if (e.at("args").at("status").str != "ok") ++failed;
        }
      }
    }
    for (const auto& kv : open) {
      if (kv.second != 0) std::printf("FAIL: %s: slice %s unbalanced\n", path.c_str(), kv.first.c_str()), ++bad;
    }
    if (finished < min_ops || failed) {
      std::printf("FAIL: %s: %ld operations finished (%ld failed), want >= %ld ok\n", path.c_str(),
                  finished, failed, min_ops);
      ++bad;
    }
    std::sort(chunk_edges.begin(), chunk_edges.end());
    long running = 0, most = 0;
    for (const auto& edge : chunk_edges) most = std::max(most, running += edge.second);
    most_overlap = std::max(most_overlap, most);
    if (r == 0) ids0 = ids;
    else if (ids != ids0) std::printf("FAIL: %s: operation ids differ from rank 0\n", path.c_str()), ++bad;
    std::printf("%s: %zu events, %ld operations, at most %ld partitions at once, %g dropped\n",
                path.c_str(), doc.at("traceEvents").items.size(), finished, most,
                doc.at("otherData").at("dropped_events").number);
  }
  if (most_overlap < min_overlap) {
    std::printf("FAIL: at most %ld partitions ran at once on any rank, want >= %ld\n", most_overlap,
                min_overlap);
    ++bad;
  }
  if (!bad) std::printf("timeline_check: OK\n");
  return bad ? 1 : 0;
}
