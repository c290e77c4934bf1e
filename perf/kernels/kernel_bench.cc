// kernel_bench: the throughput of the reduction kernels beside memcpy, in one
// run, for every kernel ISA this machine supports.
//
// Bytes counted are bytes read plus bytes written:
//   memcpy/<size>                         2 x size   (read src, write dst)
//   reduce_to/<isa>/<dtype>/<op>/<size>   3 x size   (read a and b, write out; three buffers)
//   finish_average/<isa>/<dtype>/<size>   2 x size   (read and write buf in place)
// where <size> is the size in bytes of each buffer. bytes_per_second is
// Google Benchmark's (binary: "G/s" means GiB/s); the GBps counter is the same
// rate in decimal GB/s. A 32 KiB buffer stays in L1/L2 across iterations and
// shows the kernel's compute speed; 64 MiB (192 MiB touched per call) shows
// what main memory allows, which is what large allreduces see.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "algo/half.h"
#include "algo/kernels/kernels.h"
#include "base/dtype.h"

namespace {

// Sizes and names come from the library's own table (base/dtype.h).
using kf::dtype_name;
using kf::op_name;
size_t esize(kf_dtype_t t) { return kf::dtype_size(t); }

const int64_t kSizes[] = {32 << 10, 1 << 20, 64 << 20};

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<char, FreeDeleter>;

// Page-aligned and touched, so page faults and alignment stay out of the numbers.
Buffer make_buffer(size_t bytes) {
  void* p = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
  if (p == nullptr) std::abort();
  std::memset(p, 0, bytes);
  return Buffer(static_cast<char*>(p));
}

// Ordinary values (small, positive and negative, no NaN or subnormal: those
// can be slow on some CPUs and are not what training data looks like).
void fill(kf_dtype_t t, char* p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; ++i) {
    const float f = static_cast<float>(static_cast<int>((i * 7 + seed) % 19) - 9) * 0.25f + 0.5f;
    char* e = p + i * esize(t);
    switch (t) {
      case KF_FLOAT16: {
        const uint16_t h = kf::float_to_half(f);
        std::memcpy(e, &h, 2);
        break;
      }
      case KF_BFLOAT16: {
        const uint16_t b = kf::float_to_bf16(f);
        std::memcpy(e, &b, 2);
        break;
      }
      case KF_FLOAT32:
        std::memcpy(e, &f, 4);
        break;
      case KF_FLOAT64: {
        const double d = f;
        std::memcpy(e, &d, 8);
        break;
      }
      default: {
        const uint64_t v = (i * 0x9e3779b97f4a7c15ull + seed) >> 13;
        std::memcpy(e, &v, esize(t));
        break;
      }
    }
  }
}

void set_rate(benchmark::State& state, int64_t bytes_per_call, const char* label) {
  const int64_t total = static_cast<int64_t>(state.iterations()) * bytes_per_call;
  state.SetBytesProcessed(total);
  state.counters["GBps"] = benchmark::Counter(
      static_cast<double>(total), benchmark::Counter::kIsRate, benchmark::Counter::OneK::kIs1000);
  state.SetLabel(label);
}

void bm_memcpy(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  Buffer src = make_buffer(bytes), dst = make_buffer(bytes);
  std::memset(src.get(), 1, bytes);
  for (auto _ : state) {
    std::memcpy(dst.get(), src.get(), bytes);
    benchmark::DoNotOptimize(dst.get());
    benchmark::ClobberMemory();
  }
  set_rate(state, 2 * static_cast<int64_t>(bytes), "bytes=2n(read+write)");
}

void bm_reduce_to(benchmark::State& state, kf::CombineFn fn, kf_dtype_t t) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  const size_t n = bytes / esize(t);
  Buffer a = make_buffer(bytes), b = make_buffer(bytes), out = make_buffer(bytes);
  fill(t, a.get(), n, 1);
  fill(t, b.get(), n, 2);
  for (auto _ : state) {
    fn(out.get(), a.get(), b.get(), n);
    benchmark::DoNotOptimize(out.get());
    benchmark::ClobberMemory();
  }
  set_rate(state, 3 * static_cast<int64_t>(bytes), "bytes=3n(read a,b+write out)");
}

void bm_finish_average(benchmark::State& state, kf::DivideFn fn, kf_dtype_t t) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  const size_t n = bytes / esize(t);
  Buffer buf = make_buffer(bytes);
  fill(t, buf.get(), n, 3);
  for (auto _ : state) {
    // Dividing by 1 is skipped by finish_average() but not by the kernel; it
    // keeps the values from decaying to subnormals over many iterations.
    fn(buf.get(), n, 1);
    benchmark::DoNotOptimize(buf.get());
    benchmark::ClobberMemory();
  }
  set_rate(state, 2 * static_cast<int64_t>(bytes), "bytes=2n(read+write in place)");
}

void register_all() {
  for (int64_t size : kSizes) {
    benchmark::RegisterBenchmark("memcpy", bm_memcpy)->Arg(size);
  }
  const kf_dtype_t all_dtypes[] = {KF_INT8,   KF_UINT8,   KF_INT32,    KF_UINT32,  KF_INT64,
                                   KF_UINT64, KF_FLOAT16, KF_BFLOAT16, KF_FLOAT32, KF_FLOAT64};
  const kf_dtype_t float_dtypes[] = {KF_FLOAT32, KF_FLOAT16, KF_BFLOAT16};
  for (int i = 0; i < static_cast<int>(kf::KernelIsa::kCount); ++i) {
    const kf::KernelIsa isa = static_cast<kf::KernelIsa>(i);
    if (!kf::kernel_isa_supported(isa)) continue;
    const kf::KernelTable& table = kf::kernel_table(isa);
    const std::string prefix = std::string("/") + kf::kernel_isa_name(isa) + "/";
    auto add_reduce = [&](kf_dtype_t t, kf_op_t op) {
      for (int64_t size : kSizes) {
        const std::string name = "reduce_to" + prefix + dtype_name(t) + "/" + op_name(op);
        benchmark::RegisterBenchmark(name.c_str(), bm_reduce_to, table.combine[t][op], t)
            ->Arg(size);
      }
    };
    for (kf_dtype_t t : all_dtypes) add_reduce(t, KF_SUM);
    for (kf_dtype_t t : float_dtypes) {
      for (kf_op_t op : {KF_PROD, KF_MIN, KF_MAX}) add_reduce(t, op);
      for (int64_t size : kSizes) {
        const std::string name = std::string("finish_average") + prefix + dtype_name(t);
        benchmark::RegisterBenchmark(name.c_str(), bm_finish_average, table.divide[t], t)
            ->Arg(size);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("bytes_counted",
                              "read+written: memcpy 2n, reduce_to 3n, finish_average 2n "
                              "(n = bytes per buffer, the last name field)");
  benchmark::AddCustomContext("kernel_isa_auto", kf::kernel_isa_name(kf::active_kernels().isa));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
