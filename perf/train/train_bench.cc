// Synthetic data-parallel training loop over real per-layer gradient sizes
// (models.cc) with simulated V100 compute, to measure what priority
// scheduling and online tuning buy. One run measures every mode side by side:
//
//   blocking  a communication thread reduces gradients with blocking
//             kf_all_reduce in the order backward produced them (Horovod
//             without fusion; the baseline of the scheduler's overhead)
//   fifo      kf_iall_reduce, every gradient priority 0: the engine keeps
//             submission order (last layer first)
//   priority  kf_iall_reduce with priority = layer index: the gradients the
//             next forward needs first overtake the others
//   tuned     priority, plus the online tuner (src/sched/tuner.h) choosing
//             partition size and credit (kf_comm_set_sched) from measured
//             iteration times, agreed across ranks by an all-reduce (MAX) of
//             each iteration's time; tuning iterations (at most --tune-iters,
//             one per point) come before the measured ones
//
// With KF_AUTOTUNE=1 the library's own tuner runs too, in every mode
// (kf_comm_step at each iteration's end).
//
// An iteration: forward over layers 0..L-1, where layer i first waits for
// its gradient of the previous iteration to be reduced, then computes; then
// backward over L-1..0, each layer computing and submitting its gradient.
// Compute is simulated by sleeping (not spinning, so the CPU stays free for
// the transport, as a GPU would leave it). Iteration time = time between
// the ends of consecutive forward passes; the first `warmup` are dropped, and
// the median of the rest is a block's time. With --repeat R the list of
// modes runs R times over (blocks of every mode interleaved, so a slow
// phase of a shared machine hits them alike): reported are the median of
// each mode's R block times and the median of its R paired speedups over
// the FIFO block of the same round (so a speedup need not equal the ratio
// of the two median times).
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "kungfu/async.h"
#include "kungfu/kungfu.h"
#include "models.h"
#include "sched/tuner.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::vector<std::string> models{"resnet50", "vgg16", "bert"};
  std::vector<std::string> modes{"fifo", "priority", "tuned"};
  int iters = 3;
  int warmup = 1;
  int tune_iters = 12;  // at most, before the measured iterations of "tuned"
  int repeat = 1;       // rounds over the list of modes
  int batch = 32;
  double scale = 1;     // divides gradient sizes and compute times alike
  double tflops = kftrain::kV100AchievedFlops / 1e12;
  uint64_t partition = 0;  // 0 = engine default
  std::string label;       // printed in the RESULT lines (e.g. "tcp 1gbit")
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = s.find(',', start);
    const size_t end = comma == std::string::npos ? s.size() : comma;
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "train_bench: %s\n"
               "usage: train_bench [--models resnet50,vgg16,bert] "
               "[--modes blocking,fifo,priority,tuned]\n"
               "  [--iters N] [--warmup N] [--repeat R] [--tune-iters N] [--batch N] [--scale S]\n"
               "  [--tflops T] [--partition BYTES] [--label TEXT]\n",
               why);
  std::exit(2);
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (i + 1 >= argc) usage(("missing value of " + k).c_str());
    const std::string v = argv[++i];
    if (k == "--models") a.models = split(v);
    else if (k == "--modes") a.modes = split(v);
    else if (k == "--iters") a.iters = std::atoi(v.c_str());
    else if (k == "--warmup") a.warmup = std::atoi(v.c_str());
    else if (k == "--repeat")
      a.repeat = std::atoi(v.c_str());
    else if (k == "--tune-iters") a.tune_iters = std::atoi(v.c_str());
    else if (k == "--batch") a.batch = std::atoi(v.c_str());
    else if (k == "--scale") a.scale = std::atof(v.c_str());
    else if (k == "--tflops") a.tflops = std::atof(v.c_str());
    else if (k == "--partition") a.partition = std::strtoull(v.c_str(), nullptr, 10);
    else if (k == "--label") a.label = v;
    else usage(("unknown option " + k).c_str());
  }
  if (a.iters < 1 || a.warmup < 0 || a.repeat < 1 || a.batch < 1 || !(a.scale >= 1) ||
      !(a.tflops > 0))
    usage("bad value");
  std::set<std::string> seen;
  for (const auto& m : a.modes) {
    if (m != "blocking" && m != "fifo" && m != "priority" && m != "tuned")
      usage(("unknown mode " + m).c_str());
    if (!seen.insert(m).second)
      usage(("mode " + m + " listed twice (--repeat runs the list again)").c_str());
  }
  return a;
}

void check(kf_status_t s, const char* what) {
  if (s != KF_SUCCESS) {
    std::fprintf(stderr, "train_bench: %s failed: %s\n", what, kf_status_string(s));
    std::exit(1);
  }
}

// Gradient reduction of one layer at a time, in one of the modes.
class Reducer {
 public:
  virtual ~Reducer() = default;
  virtual void submit(int layer) = 0;
  // Whether wait(layer) would return at once. Never blocks (the
  // asynchronous reducer tests its request, which may move some bytes).
  virtual bool ready(int layer) = 0;
  virtual void wait(int layer) = 0;
};

// Blocking calls on a communication thread, in submission order.
class BlockingReducer : public Reducer {
 public:
  BlockingReducer(kf_comm_t comm, std::vector<std::vector<float>>* grads)
      : comm_(comm), grads_(grads), done_(grads->size(), true), thread_([this] { loop(); }) {}
  ~BlockingReducer() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void submit(int layer) override {
    std::lock_guard<std::mutex> lock(mu_);
    done_[layer] = false;
    queue_.push_back(layer);
    cv_.notify_all();
  }
  bool ready(int layer) override {
    std::lock_guard<std::mutex> lock(mu_);
    return done_[layer];
  }
  void wait(int layer) override {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return done_[layer]; });
  }

 private:
  void loop() {
    for (;;) {
      int layer;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        layer = queue_.front();
        queue_.pop_front();
      }
      auto& g = (*grads_)[layer];
      check(kf_all_reduce(comm_, g.data(), g.data(), g.size(), KF_FLOAT32, KF_SUM), "all_reduce");
      std::lock_guard<std::mutex> lock(mu_);
      done_[layer] = true;
      cv_.notify_all();
    }
  }
  kf_comm_t comm_;
  std::vector<std::vector<float>>* grads_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<int> queue_;
  std::vector<bool> done_;
  bool stop_ = false;
  std::thread thread_;
};

// kf_iall_reduce per layer, named by the layer.
class AsyncReducer : public Reducer {
 public:
  AsyncReducer(kf_comm_t comm, const kftrain::Model& m, std::vector<std::vector<float>>* grads,
               bool use_priority)
      : comm_(comm), grads_(grads), reqs_(grads->size(), nullptr), use_priority_(use_priority) {
    for (const auto& l : m.layers) names_.push_back(m.name + "." + l.name);
  }
  ~AsyncReducer() override {
    for (size_t i = 0; i < reqs_.size(); ++i) wait(static_cast<int>(i));
  }
  void set_partition(uint64_t bytes) { partition_ = bytes; }
  void submit(int layer) override {
    kf_op_options_t o = KF_OP_OPTIONS_INITIALIZER;
    o.priority = use_priority_ ? layer : 0;
    o.partition_bytes = partition_;
    auto& g = (*grads_)[layer];
    check(kf_iall_reduce(comm_, names_[layer].c_str(), g.data(), g.data(), g.size(), KF_FLOAT32,
                         KF_SUM, &o, &reqs_[layer]),
          "iall_reduce");
  }
  bool ready(int layer) override {
    return !reqs_[layer] || kf_request_test(reqs_[layer]) != KF_IN_PROGRESS;
  }
  void wait(int layer) override {
    if (!reqs_[layer]) return;
    const kf_status_t s = kf_request_wait(reqs_[layer]);
    if (s != KF_SUCCESS) {
      std::fprintf(stderr, "train_bench: %s: %s\n", names_[layer].c_str(),
                   kf_request_error(reqs_[layer]));
      std::exit(1);
    }
    check(kf_request_free(reqs_[layer]), "request_free");
    reqs_[layer] = nullptr;
  }

 private:
  kf_comm_t comm_;
  std::vector<std::vector<float>>* grads_;
  std::vector<kf_request_t> reqs_;
  std::vector<std::string> names_;
  bool use_priority_;
  uint64_t partition_ = 0;
};

// The simulated GPU: sleeps until an absolute deadline that advances by
// each layer's compute time. A thread that wakes late (the transport's work
// competes for the cores) sleeps that much less next time, and the loop
// thread's own CPU work (submissions, request tests) overlaps the compute,
// as kernels queued on a GPU would run while the framework's thread works.
// The schedule moves only with waits: for a gradient that was not reduced
// yet (resume), and the iteration's synchronisation point (shift). A
// gradient that completes while the thread is late counts as in time (an
// error of at most the wake-up lateness, alike in every mode).
class ComputeClock {
 public:
  void start() { deadline_ = Clock::now(); }
  // After a wait that blocked: compute resumes now, not on the old schedule.
  void resume() { deadline_ = std::max(deadline_, Clock::now()); }
  // The loop spent `d` outside compute, waiting.
  void shift(Clock::duration d) { deadline_ += d; }
  void compute(double seconds) {
    deadline_ +=
        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    std::this_thread::sleep_until(deadline_);
  }

 private:
  Clock::time_point deadline_;
};

struct ModeResult {
  std::string mode;
  double median_ms = 0, min_ms = 0;
  std::string note;
};

class Trainer {
 public:
  Trainer(kf_comm_t comm, int rank, int size, const kftrain::Model& m, const Args& a)
      : comm_(comm), rank_(rank), size_(size), model_(m), args_(a) {
    times_ = kftrain::v100_times(m, a.batch, a.tflops * 1e12);
    for (auto& t : times_.fwd_s) t /= a.scale;
    for (auto& t : times_.bwd_s) t /= a.scale;
    for (const auto& l : m.layers) {
      const uint64_t n = std::max<uint64_t>(1, static_cast<uint64_t>(l.params / a.scale));
      grads_.emplace_back(n, 0.0f);
      bytes_ += n * sizeof(float);
    }
  }

  uint64_t bytes() const { return bytes_; }
  double compute_s() const { return times_.total_s(); }
  double forward_s() const {
    double f = 0;
    for (double t : times_.fwd_s) f += t;
    return f;
  }

  ModeResult run(const std::string& mode) {
    ModeResult r;
    r.mode = mode;
    std::unique_ptr<Reducer> red;
    AsyncReducer* async = nullptr;
    if (mode == "blocking") {
      red = std::make_unique<BlockingReducer>(comm_, &grads_);
    } else {
      auto ar = std::make_unique<AsyncReducer>(comm_, model_, &grads_, mode != "fifo");
      ar->set_partition(args_.partition);
      async = ar.get();
      red = std::move(ar);
    }
    std::unique_ptr<kf::Tuner> tuner;
    int tuning_left = 0;
    uint64_t partition0 = 0, credit0 = 0;
    check(kf_comm_get_sched(comm_, &partition0, &credit0), "comm_get_sched");
    if (mode == "tuned") {
      kf::TunerConfig c;
      c.min_partition = 256u << 10;
      c.max_partition = 64u << 20;
      c.min_credit = 1u << 20;
      c.max_credit = 256u << 20;
      c.samples_per_point = 1;  // one iteration per point: iterations are long
      c.initial_step = 2;
      c.max_points = args_.tune_iters;
      tuner = std::make_unique<kf::Tuner>(
          c, kf::TuneParams{args_.partition ? args_.partition : partition0, credit0});
      // The engine default applies to operations submitted after the call,
      // and every rank calls it at the same point (between iterations).
      async->set_partition(0);
      apply(tuner->current());
      tuning_left = args_.tune_iters;
    }
    const int L = static_cast<int>(grads_.size());
    std::vector<double> iter_s;
    bool submitted = false;
    Clock::time_point last_fwd_end;
    int it = 0;
    int step = 0;  // backward passes so far: tags the gradients for verify()
    const int total = args_.warmup + args_.iters;
    clock_.start();
    for (;;) {
      // Forward: layer i needs its reduced gradient of the last iteration.
      for (int i = 0; i < L; ++i) {
        if (submitted) {
          const bool blocked = !red->ready(i);
          red->wait(i);
          if (blocked) clock_.resume();
          verify(i, step);
        }
        clock_.compute(times_.fwd_s[i]);
      }
      const Clock::time_point fwd_end = Clock::now();
      if (submitted) {
        const double s = std::chrono::duration<double>(fwd_end - last_fwd_end).count();
        if (tuner && tuning_left > 0) {
          // Every rank feeds the slowest rank's time: identical decisions.
          double agreed = s;
          check(kf_all_reduce(comm_, &agreed, &agreed, 1, KF_FLOAT64, KF_MAX), "tune all_reduce");
          tuner->observe(static_cast<double>(bytes_), agreed);
          if (--tuning_left == 0 || tuner->phase() == kf::Tuner::Phase::kConverged) {
            // Out of budget or converged: keep the best point measured.
            tuning_left = 0;
            const kf::TuneParams best = tuner->best();
            apply(best);
            r.note = "partition " + std::to_string(best.partition_bytes >> 10) + " KiB, credit " +
                     std::to_string(best.credit_bytes >> 20) + " MiB after " +
                     std::to_string(tuner->points_measured()) + " points";
          } else {
            apply(tuner->current());
          }
        } else {
          if (it > args_.warmup) iter_s.push_back(s);
        }
      }
      last_fwd_end = fwd_end;
      if (tuning_left == 0 && it >= total) break;
      // The library's own tuner (KF_AUTOTUNE=1; a no-op otherwise) ends its
      // step here, at the same point of every rank's submissions.
      check(kf_comm_step(comm_), "comm_step");
      // The tuner's agreement and kf_comm_step are the iteration's
      // synchronisation point: the GPU waits for them.
      clock_.shift(Clock::now() - fwd_end);
      // Backward: gradients from the last layer to the first.
      ++step;
      for (int i = L - 1; i >= 0; --i) {
        clock_.compute(times_.bwd_s[i]);
        mark(i, step);
        red->submit(i);
      }
      submitted = true;
      if (tuning_left == 0) ++it;
    }
    red.reset();  // waits for anything still running
    if (tuner) check(kf_comm_set_sched(comm_, partition0, credit0), "comm_set_sched");
    // The median, not the mean: on a shared machine one descheduled
    // iteration would otherwise swing the comparison.
    r.median_ms = 1e3 * median(iter_s);
    r.min_ms = 1e3 * *std::min_element(iter_s.begin(), iter_s.end());
    return r;
  }

 private:
  void apply(const kf::TuneParams& p) {
    check(kf_comm_set_sched(comm_, p.partition_bytes, p.credit_bytes), "comm_set_sched");
  }

  // The first and last element of each gradient carry (rank + 1) * tag, so
  // after the sum they must be tag * size * (size + 1) / 2 exactly; the rest
  // stay 0. A wrong or stale reduction is caught at every wait.
  void mark(int layer, int tag) {
    auto& g = grads_[layer];
    g.front() = g.back() = static_cast<float>((rank_ + 1) * (tag % 64 + 1));
  }
  void verify(int layer, int tag) {
    const auto& g = grads_[layer];
    const float want = static_cast<float>((tag % 64 + 1) * size_ * (size_ + 1) / 2);
    if (g.front() != want || g.back() != want) {
      std::fprintf(stderr, "train_bench: rank %d layer %s: got %g/%g, want %g\n", rank_,
                   model_.layers[layer].name.c_str(), g.front(), g.back(), want);
      std::exit(1);
    }
  }

  kf_comm_t comm_;
  int rank_, size_;
  const kftrain::Model& model_;
  const Args& args_;
  kftrain::LayerTimes times_;
  std::vector<std::vector<float>> grads_;
  uint64_t bytes_ = 0;
  ComputeClock clock_;
};

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  kf_comm_t comm;
  check(kf_comm_init_from_env(nullptr, &comm), "comm_init_from_env");
  int rank = 0, size = 1;
  check(kf_comm_rank(comm, &rank), "comm_rank");
  check(kf_comm_size(comm, &size), "comm_size");
  for (const auto& name : args.models) {
    kftrain::Model m;
    if (!kftrain::model_by_name(name, &m)) usage(("unknown model " + name).c_str());
    Trainer t(comm, rank, size, m, args);
    if (rank == 0) {
      std::printf("# %s: %zu layers, %.1f M params, %.1f MB of gradients per iteration "
                  "(scale 1/%g), compute %.1f ms per iteration (batch %d, %.1f TFLOP/s), "
                  "np %d %s\n",
                  m.name.c_str(), m.layers.size(), m.total_params() / 1e6, t.bytes() / 1e6,
                  args.scale, t.compute_s() * 1e3, args.batch, args.tflops, size,
                  args.label.c_str());
    }
    // Per mode and round: the block time, its speedup over the FIFO block
    // of the same round, the fastest iteration, the tuner's choice.
    std::map<std::string, std::vector<double>> block_ms, speedups;
    std::map<std::string, std::vector<std::string>> notes;
    std::map<std::string, double> min_ms;
    for (int round = 0; round < args.repeat; ++round) {
      for (const auto& mode : args.modes) {
        check(kf_barrier(comm), "barrier");
        const ModeResult r = t.run(mode);
        block_ms[mode].push_back(r.median_ms);
        notes[mode].push_back(r.note);
        auto fastest = min_ms.emplace(mode, r.min_ms).first;
        fastest->second = std::min(fastest->second, r.min_ms);
        if (rank == 0 && args.repeat > 1) {
          std::printf("BLOCK model=%s label=\"%s\" round=%d mode=%s iter_ms=%.1f\n", m.name.c_str(),
                      args.label.c_str(), round, mode.c_str(), r.median_ms);
        }
      }
      if (block_ms.count("fifo")) {
        for (const auto& mode : args.modes) {
          speedups[mode].push_back(block_ms["fifo"].back() / block_ms[mode].back());
        }
      }
    }
    if (rank == 0) {
      for (const auto& mode : args.modes) {
        const std::vector<double>& blocks = block_ms[mode];
        const double ms = median(blocks);
        // The tuner's choice in the round whose block is the median (the
        // lower middle one for an even number of rounds).
        std::vector<size_t> by_time(blocks.size());
        for (size_t i = 0; i < by_time.size(); ++i) by_time[i] = i;
        std::sort(by_time.begin(), by_time.end(),
                  [&](size_t x, size_t y) { return blocks[x] < blocks[y]; });
        const std::string& note = notes[mode][by_time[(by_time.size() - 1) / 2]];
        std::printf("RESULT model=%s label=\"%s\" mode=%s iter_ms=%.1f min_ms=%.1f", m.name.c_str(),
                    args.label.c_str(), mode.c_str(), ms, min_ms[mode]);
        if (args.repeat > 1) std::printf(" rounds=%d", args.repeat);
        if (speedups.count(mode)) std::printf(" speedup_vs_fifo=%.3f", median(speedups[mode]));
        if (mode == "fifo") {
          // What a perfect priority schedule could reach given this FIFO
          // time (README "the bound"): FIFO ~ max(B, C) + F, priority ~
          // max(B + F, C), so C ~ fifo - F and the ideal is max(B + F, C).
          const double ideal = std::max(t.compute_s() * 1e3, ms - t.forward_s() * 1e3);
          std::printf(" ideal_priority_ms=%.1f bound_speedup=%.3f", ideal, ms / ideal);
        }
        if (!note.empty()) std::printf(" note=\"%s\"", note.c_str());
        std::printf("\n");
      }
      std::fflush(stdout);
    }
  }
  uint64_t partition = 0, credit = 0;
  check(kf_comm_get_sched(comm, &partition, &credit), "comm_get_sched");
  if (rank == 0) {
    std::printf("# scheduler at the end: partition %llu B, credit %llu B%s\n",
                static_cast<unsigned long long>(partition), static_cast<unsigned long long>(credit),
                std::getenv("KF_AUTOTUNE") ? " (KF_AUTOTUNE set)" : "");
  }
  check(kf_comm_destroy(comm), "comm_destroy");
  return 0;
}
