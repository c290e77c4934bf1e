// topk_bench: MSTopK against exact top-k (std::nth_element) through kf_topk,
// side by side in one run: time of each, speedup, and the quality of MSTopK
// as the fraction of the exact top-k's L1 mass it captures.
//
//   topk_bench [--sizes 1000000,25600000,138000000] [--densities 0.001,0.01]
//              [--data gaussian|student-t] [--reps 3] [--rounds 20]
//              [--threads 0] [--seed 1]
//
// Times are the median of --reps runs, in milliseconds, of one kf_topk call
// on data already in memory (outputs allocated beforehand). Exits non-zero if
// an output is not k distinct indices with values from x.
#include <kungfu/kungfu.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Args {
  std::vector<double> sizes{1e6, 25.6e6, 138e6};
  std::vector<double> densities{0.001, 0.01};
  std::string data = "gaussian";
  int reps = 3;
  int rounds = 20;
  int threads = 0;
  uint64_t seed = 1;
};

std::vector<double> parse_list(const char* s) {
  std::vector<double> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(std::atof(item.c_str()));
  return out;
}

bool parse(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) return false;
    const char* v = argv[++i];
    if (flag == "--sizes") {
      a->sizes = parse_list(v);
    } else if (flag == "--densities") {
      a->densities = parse_list(v);
    } else if (flag == "--data") {
      a->data = v;
    } else if (flag == "--reps") {
      a->reps = std::atoi(v);
    } else if (flag == "--rounds") {
      a->rounds = std::atoi(v);
    } else if (flag == "--threads") {
      a->threads = std::atoi(v);
    } else if (flag == "--seed") {
      a->seed = std::strtoull(v, nullptr, 10);
    } else {
      return false;
    }
  }
  return a->reps > 0 && (a->data == "gaussian" || a->data == "student-t");
}

std::vector<float> make_data(size_t d, const std::string& kind, uint64_t seed) {
  std::vector<float> x(d);
  std::mt19937_64 rng(seed);
  if (kind == "gaussian") {
    std::normal_distribution<float> dist(0.0f, 1.0f);
    for (float& v : x) v = dist(rng);
  } else {
    std::student_t_distribution<float> dist(2.0f);
    for (float& v : x) v = dist(rng);
  }
  return x;
}

double l1(const std::vector<float>& v) {
  double s = 0.0;
  for (float f : v) s += std::fabs(f);
  return s;
}

bool valid(const std::vector<float>& x, const std::vector<float>& v,
           const std::vector<uint32_t>& i) {
  for (size_t j = 0; j < i.size(); ++j) {
    if (i[j] >= x.size() || (j > 0 && i[j] <= i[j - 1]) || v[j] != x[i[j]]) return false;
  }
  return true;
}

// Median time in ms of `reps` calls; false (with a message) if a call fails.
bool time_topk(const std::vector<float>& x, size_t k, kf_topk_algo_t algo,
               const kf_topk_options_t& opts, int reps, std::vector<float>* v,
               std::vector<uint32_t>* idx, double* ms) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto start = std::chrono::steady_clock::now();
    const kf_status_t st = kf_topk(x.data(), x.size(), k, algo, &opts, v->data(), idx->data());
    const auto end = std::chrono::steady_clock::now();
    if (st != KF_SUCCESS) {
      std::fprintf(stderr, "kf_topk: %s: %s\n", kf_status_string(st), kf_comm_last_error(nullptr));
      return false;
    }
    t.push_back(std::chrono::duration<double, std::milli>(end - start).count());
  }
  std::sort(t.begin(), t.end());
  *ms = t[t.size() / 2];
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!parse(argc, argv, &a)) {
    std::fprintf(stderr,
                 "usage: topk_bench [--sizes N,N,...] [--densities F,F,...] "
                 "[--data gaussian|student-t] [--reps R] [--rounds N] [--threads T] [--seed S]\n");
    return 2;
  }
  std::printf(
      "# topk_bench: MSTopK vs exact top-k (std::nth_element), kf_topk on float32 %s data\n",
      a.data.c_str());
  std::printf("# rounds %d, threads %d (0 = auto; %u hardware threads), median of %d runs\n",
              a.rounds, a.threads, std::thread::hardware_concurrency(), a.reps);
  std::printf("# %11s %8s %9s %10s %10s %8s %8s\n", "d", "density", "k", "exact_ms", "mstopk_ms",
              "speedup", "mass");
  kf_topk_options_t opts = KF_TOPK_OPTIONS_INITIALIZER;
  opts.rounds = a.rounds;
  opts.threads = a.threads;
  opts.seed = a.seed;
  int bad = 0;
  for (double ds : a.sizes) {
    const size_t d = static_cast<size_t>(ds);
    const std::vector<float> x = make_data(d, a.data, a.seed);
    for (double density : a.densities) {
      const size_t k = std::max<size_t>(1, static_cast<size_t>(density * static_cast<double>(d)));
      std::vector<float> ev(k), mv(k);
      std::vector<uint32_t> ei(k), mi(k);
      double exact_ms = 0, ms_ms = 0;
      if (!time_topk(x, k, KF_TOPK_EXACT, opts, a.reps, &ev, &ei, &exact_ms) ||
          !time_topk(x, k, KF_TOPK_MSTOPK, opts, a.reps, &mv, &mi, &ms_ms)) {
        return 1;
      }
      if (!valid(x, ev, ei) || !valid(x, mv, mi)) {
        std::fprintf(stderr, "d=%zu k=%zu: an output is not k distinct indices with x's values\n",
                     d, k);
        ++bad;
      }
      std::printf("  %11zu %8g %9zu %10.2f %10.2f %7.1fx %8.6f\n", d, density, k, exact_ms, ms_ms,
                  exact_ms / ms_ms, l1(mv) / l1(ev));
      std::fflush(stdout);
    }
  }
  return bad == 0 ? 0 : 1;
}
