// MSTopK on a CUDA device. The host drives the threshold search of
// sparse/topk_search.h; the device makes the passes:
//
//  1. stats_kernel: one warp per 65536-element block of x, lane j adding
//     elements j, j + 32, ... in float, exactly the lane order of the CPU
//     (sparse/topk_kernels.h), so the host derives the same mean bit for bit;
//     the largest key by warp reduction and atomicMax.
//  2. count_kernel, once per probe: a grid-stride count of key >= t, reduced
//     in each block (warp shuffles, then shared memory) and added to one
//     global counter with a single atomicAdd per block.
//  3. tile_count_kernel + select_kernel: per 4096-element tile, the elements
//     at or above t1 and in the band [t2, t1); the host turns them into each
//     tile's output and band-ordinal start (prefix sums, as the CPU does per
//     block); then each tile writes its pairs in index order, its threads
//     finding their slots with block-wide ballot scans. The output is thus
//     the CPU's: ascending indices, the same band window.
#include <algorithm>
#include <string>
#include <vector>

#include "cuda/mstopk_cuda.h"
#include "sparse/topk_common.h"
#include "sparse/topk_search.h"

namespace kf {
namespace cuda {
namespace {

constexpr int kThreads = 256;                      // threads per block, every kernel
constexpr int kWarps = kThreads / 32;
constexpr size_t kStatsBlock = topk::kBlock;       // elements per warp in stats_kernel
constexpr size_t kTile = 4096;                     // elements per block in the selection
constexpr uint32_t kKeyMask = topk::kKeyMask;
constexpr uint32_t kInfKey = topk::kInfKey;

__device__ __forceinline__ uint32_t dev_key(float v) { return __float_as_uint(v) & kKeyMask; }

__global__ void stats_kernel(const float* x, size_t d, float* lane_sums, uint32_t* max_key) {
  const size_t warp = (static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x) / 32;
  const unsigned lane = threadIdx.x & 31u;
  const size_t begin = warp * kStatsBlock;
  if (begin >= d) return;  // whole warps leave together: the block size is a multiple of 32
  const size_t end = begin + kStatsBlock < d ? begin + kStatsBlock : d;
  float sum = 0.0f;
  uint32_t m = 0;
#pragma unroll 8
  for (size_t i = begin + lane; i < end; i += 32) {
    const uint32_t key = dev_key(x[i]);
    sum += __uint_as_float(key);  // in order: the CPU lane's float additions
    m = key > m ? key : m;
  }
  lane_sums[warp * 32 + lane] = sum;
  for (int off = 16; off > 0; off >>= 1) {
    const uint32_t other = __shfl_down_sync(0xffffffffu, m, off);
    m = other > m ? other : m;
  }
  if (lane == 0) atomicMax(max_key, m);
}

// The lowest index of a NaN or Inf, for the error message.
__global__ void first_non_finite_kernel(const float* x, size_t d, unsigned long long* first) {
  for (size_t i = static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x; i < d;
       i += static_cast<size_t>(gridDim.x) * kThreads) {
    if (dev_key(x[i]) >= kInfKey) atomicMin(first, static_cast<unsigned long long>(i));
  }
}

__global__ void count_kernel(const float* x, size_t d, uint32_t t, unsigned long long* total) {
  __shared__ unsigned long long warp_sums[kWarps];
  unsigned long long c = 0;
  for (size_t i = static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x; i < d;
       i += static_cast<size_t>(gridDim.x) * kThreads) {
    c += dev_key(x[i]) >= t ? 1 : 0;
  }
  for (int off = 16; off > 0; off >>= 1) c += __shfl_down_sync(0xffffffffu, c, off);
  if ((threadIdx.x & 31u) == 0) warp_sums[threadIdx.x / 32] = c;
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned long long s = 0;
    for (int w = 0; w < kWarps; ++w) s += warp_sums[w];
    if (s != 0) atomicAdd(total, s);
  }
}

// Exclusive prefix of `flag` over the block's threads (in thread order), and
// the block's total. Every thread of the block must call it.
__device__ __forceinline__ unsigned block_scan(bool flag, unsigned* warp_totals,
                                               unsigned* total) {
  const unsigned lane = threadIdx.x & 31u;
  const unsigned warp = threadIdx.x / 32;
  const unsigned ballot = __ballot_sync(0xffffffffu, flag);
  const unsigned within = __popc(ballot & ((1u << lane) - 1u));
  if (lane == 0) warp_totals[warp] = __popc(ballot);
  __syncthreads();
  unsigned before = 0, sum = 0;
  for (unsigned w = 0; w < static_cast<unsigned>(kWarps); ++w) {
    const unsigned c = warp_totals[w];
    before += w < warp ? c : 0;
    sum += c;
  }
  __syncthreads();  // warp_totals is reused by the next scan
  *total = sum;
  return before + within;
}

__global__ void tile_count_kernel(const float* x, size_t d, uint32_t t1, uint32_t t2,
                                  uint32_t* above, uint32_t* band) {
  __shared__ unsigned warp_totals[kWarps];
  const size_t begin = static_cast<size_t>(blockIdx.x) * kTile;
  unsigned n_above = 0, n_band = 0;
  for (size_t r = 0; r < kTile; r += kThreads) {
    const size_t i = begin + r + threadIdx.x;
    const uint32_t key = i < d ? dev_key(x[i]) : 0;
    unsigned a = 0, b = 0;
    block_scan(i < d && key >= t1, warp_totals, &a);
    block_scan(i < d && key >= t2 && key < t1, warp_totals, &b);
    n_above += a;
    n_band += b;
  }
  if (threadIdx.x == 0) {
    above[blockIdx.x] = n_above;
    band[blockIdx.x] = n_band;
  }
}

__global__ void select_kernel(const float* x, size_t d, uint32_t t1, uint32_t t2,
                              const unsigned long long* band_start,
                              const unsigned long long* out_start, unsigned long long win_lo,
                              unsigned long long win_hi, float* values, uint32_t* indices) {
  __shared__ unsigned warp_totals[kWarps];
  const size_t begin = static_cast<size_t>(blockIdx.x) * kTile;
  unsigned long long band = band_start[blockIdx.x];
  unsigned long long out = out_start[blockIdx.x];
  for (size_t r = 0; r < kTile; r += kThreads) {
    const size_t i = begin + r + threadIdx.x;
    const float v = i < d ? x[i] : 0.0f;
    const uint32_t key = dev_key(v);
    const bool is_above = i < d && key >= t1;
    const bool is_band = i < d && key >= t2 && key < t1;
    unsigned band_total = 0, out_total = 0;
    const unsigned long long ordinal = band + block_scan(is_band, warp_totals, &band_total);
    const bool take = is_above || (is_band && ordinal >= win_lo && ordinal < win_hi);
    const unsigned slot = block_scan(take, warp_totals, &out_total);
    if (take) {
      values[out + slot] = v;
      indices[out + slot] = static_cast<uint32_t>(i);
    }
    band += band_total;
    out += out_total;
  }
}

__global__ void iota_kernel(uint32_t* indices, size_t d) {
  for (size_t i = static_cast<size_t>(blockIdx.x) * kThreads + threadIdx.x; i < d;
       i += static_cast<size_t>(gridDim.x) * kThreads) {
    indices[i] = static_cast<uint32_t>(i);
  }
}

Status cuda_error(const char* call, cudaError_t e) {
  return system_error(std::string("mstopk_device: ") + call + ": " + cudaGetErrorString(e));
}

#define KF_CUDA_TRY(call)                                   \
  do {                                                      \
    const cudaError_t kf_cuda_err_ = (call);                \
    if (kf_cuda_err_ != cudaSuccess) return cuda_error(#call, kf_cuda_err_); \
  } while (0)

// Device scratch memory, freed when it goes out of scope.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (p_ != nullptr) cudaFree(p_);
  }
  cudaError_t allocate(size_t bytes) { return cudaMalloc(&p_, bytes == 0 ? 1 : bytes); }
  template <typename T>
  T* as() const {
    return static_cast<T*>(p_);
  }

 private:
  void* p_ = nullptr;
};

// A grid for grid-stride loops: enough blocks to fill the device, no more
// than the data needs.
unsigned stride_grid(size_t n) {
  int device = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
    sms = 16;
  }
  const size_t want = (n + kThreads - 1) / kThreads;
  const size_t cap = static_cast<size_t>(sms) * 8;
  return static_cast<unsigned>(std::max<size_t>(1, std::min(want, cap)));
}

}  // namespace

bool device_available(std::string* why) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    *why = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e);
    return false;
  }
  if (count == 0) {
    *why = "no CUDA device";
    return false;
  }
  return true;
}

Status mstopk_device(const float* x, size_t d, size_t k, const TopkOptions& options,
                     float* values, uint32_t* indices, cudaStream_t stream) {
  KF_RETURN_IF_ERROR(topk::check_args("mstopk_device", x, d, k, values, indices));
  if (options.rounds < 0) {
    return invalid_argument("mstopk_device: rounds = " + std::to_string(options.rounds) +
                            " is negative");
  }
  if (d == 0 || k == 0) return Status::ok();

  // 1. Mean and max of |x|.
  const size_t stat_blocks = topk::block_count(d);
  DeviceBuffer lane_sums, scalars;
  KF_CUDA_TRY(lane_sums.allocate(stat_blocks * 32 * sizeof(float)));
  KF_CUDA_TRY(scalars.allocate(2 * sizeof(unsigned long long)));
  uint32_t* max_key_dev = scalars.as<uint32_t>();
  unsigned long long* counter_dev = scalars.as<unsigned long long>() + 1;
  KF_CUDA_TRY(cudaMemsetAsync(max_key_dev, 0, sizeof(uint32_t), stream));
  const size_t stat_warps_per_block = kThreads / 32;
  stats_kernel<<<static_cast<unsigned>((stat_blocks + stat_warps_per_block - 1) /
                                       stat_warps_per_block),
                 kThreads, 0, stream>>>(x, d, lane_sums.as<float>(), max_key_dev);
  KF_CUDA_TRY(cudaGetLastError());
  std::vector<float> lanes(stat_blocks * 32);
  uint32_t max_key = 0;
  KF_CUDA_TRY(cudaMemcpyAsync(lanes.data(), lane_sums.as<float>(), lanes.size() * sizeof(float),
                              cudaMemcpyDeviceToHost, stream));
  KF_CUDA_TRY(cudaMemcpyAsync(&max_key, max_key_dev, sizeof(max_key), cudaMemcpyDeviceToHost,
                              stream));
  KF_CUDA_TRY(cudaStreamSynchronize(stream));
  if (max_key >= kInfKey) {
    unsigned long long first = ~0ull;
    KF_CUDA_TRY(cudaMemcpyAsync(counter_dev, &first, sizeof(first), cudaMemcpyHostToDevice, stream));
    first_non_finite_kernel<<<stride_grid(d), kThreads, 0, stream>>>(x, d, counter_dev);
    KF_CUDA_TRY(cudaGetLastError());
    KF_CUDA_TRY(cudaMemcpyAsync(&first, counter_dev, sizeof(first), cudaMemcpyDeviceToHost, stream));
    KF_CUDA_TRY(cudaStreamSynchronize(stream));
    return invalid_argument("mstopk_device: x[" + std::to_string(first) +
                            "] is NaN or Inf; top-k needs finite values");
  }
  if (k >= d) {
    KF_CUDA_TRY(cudaMemcpyAsync(values, x, d * sizeof(float), cudaMemcpyDeviceToDevice, stream));
    iota_kernel<<<stride_grid(d), kThreads, 0, stream>>>(indices, d);
    KF_CUDA_TRY(cudaGetLastError());
    KF_CUDA_TRY(cudaStreamSynchronize(stream));
    return Status::ok();
  }
  // The CPU's order: lanes in order within a block (double), blocks in order.
  double total = 0.0;
  for (size_t b = 0; b < stat_blocks; ++b) {
    double block = 0.0;
    for (size_t j = 0; j < 32; ++j) block += lanes[b * 32 + j];
    total += block;
  }
  const uint32_t mean_key = topk::key_of(static_cast<float>(total / static_cast<double>(d)));

  // 2. The search, one counting pass per probe.
  topk::ThresholdSearch search(d, k, mean_key, max_key, options.rounds);
  const unsigned grid = stride_grid(d);
  uint32_t t = 0;
  while (search.next(&t)) {
    KF_CUDA_TRY(cudaMemsetAsync(counter_dev, 0, sizeof(unsigned long long), stream));
    count_kernel<<<grid, kThreads, 0, stream>>>(x, d, t, counter_dev);
    KF_CUDA_TRY(cudaGetLastError());
    unsigned long long n = 0;
    KF_CUDA_TRY(cudaMemcpyAsync(&n, counter_dev, sizeof(n), cudaMemcpyDeviceToHost, stream));
    KF_CUDA_TRY(cudaStreamSynchronize(stream));
    search.report(t, n);
  }
  const topk::Bracket br = search.bracket();
  const uint64_t need = k - br.k1;
  const uint64_t win_lo = need > 0 ? topk::window_start(options.seed, br.k2 - br.k1, need) : 0;
  const uint64_t win_hi = win_lo + need;

  // 3. Per-tile counts, their prefix sums on the host, then the writes.
  const size_t tiles = (d + kTile - 1) / kTile;
  DeviceBuffer tile_counts, starts;
  KF_CUDA_TRY(tile_counts.allocate(2 * tiles * sizeof(uint32_t)));
  KF_CUDA_TRY(starts.allocate(2 * tiles * sizeof(unsigned long long)));
  tile_count_kernel<<<static_cast<unsigned>(tiles), kThreads, 0, stream>>>(
      x, d, br.t1, br.t2, tile_counts.as<uint32_t>(), tile_counts.as<uint32_t>() + tiles);
  KF_CUDA_TRY(cudaGetLastError());
  std::vector<uint32_t> counts(2 * tiles);
  KF_CUDA_TRY(cudaMemcpyAsync(counts.data(), tile_counts.as<uint32_t>(),
                              counts.size() * sizeof(uint32_t), cudaMemcpyDeviceToHost, stream));
  KF_CUDA_TRY(cudaStreamSynchronize(stream));
  std::vector<unsigned long long> start(2 * tiles);  // band starts, then output starts
  unsigned long long band = 0, out = 0;
  for (size_t i = 0; i < tiles; ++i) {
    start[i] = band;
    start[tiles + i] = out;
    const uint64_t in_band = counts[tiles + i];
    const uint64_t lo = std::max<uint64_t>(band, win_lo);
    const uint64_t hi = std::min<uint64_t>(band + in_band, win_hi);
    out += counts[i] + (hi > lo ? hi - lo : 0);
    band += in_band;
  }
  if (out != k || band != br.k2 - br.k1) {
    return internal_error("mstopk_device: the tiles hold " + std::to_string(out) +
                          " pairs, not k = " + std::to_string(k));
  }
  KF_CUDA_TRY(cudaMemcpyAsync(starts.as<unsigned long long>(), start.data(),
                              start.size() * sizeof(unsigned long long), cudaMemcpyHostToDevice,
                              stream));
  select_kernel<<<static_cast<unsigned>(tiles), kThreads, 0, stream>>>(
      x, d, br.t1, br.t2, starts.as<unsigned long long>(), starts.as<unsigned long long>() + tiles,
      win_lo, win_hi, values, indices);
  KF_CUDA_TRY(cudaGetLastError());
  KF_CUDA_TRY(cudaStreamSynchronize(stream));
  return Status::ok();
}

}  // namespace cuda
}  // namespace kf
