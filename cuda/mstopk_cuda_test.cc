// The CUDA MSTopK against the CPU: on a machine with a CUDA device it must
// select exactly the CPU's pairs (same search, same mean, same window) and
// capture >= 95% of the exact top-k's L1 mass; it handles the edge cases as
// the CPU does. Without a device the test exits 77, which ctest reports as
// skipped, after saying why.
#include "cuda/mstopk_cuda.h"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "sparse/topk.h"
#include "topk_test_util.h"

namespace {

using kf_test::Pairs;

template <typename T>
cudaError_t device_alloc(T** p, size_t count) {
  void* v = nullptr;
  const cudaError_t e = cudaMalloc(&v, std::max<size_t>(1, count) * sizeof(T));
  *p = static_cast<T*>(v);
  return e;
}

// Device copies of x and the outputs; runs mstopk_device and copies back.
kf::Status run_device(const std::vector<float>& x, size_t k, const kf::TopkOptions& o, Pairs* p) {
  const size_t n = std::min(k, x.size());
  float* dx = nullptr;
  float* dv = nullptr;
  uint32_t* di = nullptr;
  EXPECT_EQ(device_alloc(&dx, x.size()), cudaSuccess);
  EXPECT_EQ(device_alloc(&dv, n), cudaSuccess);
  EXPECT_EQ(device_alloc(&di, n), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(dx, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice),
            cudaSuccess);
  const kf::Status st = kf::cuda::mstopk_device(dx, x.size(), k, o, dv, di, nullptr);
  p->values.assign(n, 0.0f);
  p->indices.assign(n, 0);
  if (st.is_ok()) {
    EXPECT_EQ(cudaMemcpy(p->values.data(), dv, n * sizeof(float), cudaMemcpyDeviceToHost),
              cudaSuccess);
    EXPECT_EQ(cudaMemcpy(p->indices.data(), di, n * sizeof(uint32_t), cudaMemcpyDeviceToHost),
              cudaSuccess);
  }
  cudaFree(dx);
  cudaFree(dv);
  cudaFree(di);
  return st;
}

Pairs run_cpu(const std::vector<float>& x, size_t k, const kf::TopkOptions& o) {
  Pairs p;
  p.values.resize(std::min(k, x.size()));
  p.indices.resize(p.values.size());
  EXPECT_TRUE(kf::mstopk(x.data(), x.size(), k, o, p.values.data(), p.indices.data()).is_ok());
  return p;
}

TEST(CudaMstopk, SameAsCpuAndCapturesTheMass) {
  for (size_t d : {size_t{1000}, size_t{70000}, size_t{1} << 22}) {
    for (int data = 0; data < 2; ++data) {
      const auto x = data == 0 ? kf_test::gaussian(d, d) : kf_test::heavy_tailed(d, d + 1);
      for (double density : {0.001, 0.01, 0.3}) {
        const size_t k = std::max<size_t>(1, static_cast<size_t>(density * d));
        kf::TopkOptions o;
        o.seed = 17;
        Pairs gpu;
        const kf::Status st = run_device(x, k, o, &gpu);
        ASSERT_TRUE(st.is_ok()) << st.message();
        const Pairs cpu = run_cpu(x, k, o);
        EXPECT_EQ(gpu.indices, cpu.indices) << "d=" << d << " k=" << k;
        EXPECT_EQ(gpu.values, cpu.values) << "d=" << d << " k=" << k;
        const double mass =
            kf_test::l1(gpu.values) / kf_test::l1(kf_test::sorted_topk(x, k).values);
        EXPECT_GE(mass, 0.95) << "d=" << d << " k=" << k;
      }
    }
  }
}

TEST(CudaMstopk, EdgeCases) {
  kf::TopkOptions o;
  Pairs p;
  const auto x = kf_test::gaussian(5000, 3);
  EXPECT_TRUE(run_device(x, 0, o, &p).is_ok());
  ASSERT_TRUE(run_device(x, 9000, o, &p).is_ok());  // k >= d: everything
  EXPECT_EQ(p.values, x);
  const std::vector<float> zeros(100000, 0.0f);
  ASSERT_TRUE(run_device(zeros, 100, o, &p).is_ok());
  EXPECT_EQ(p.indices, run_cpu(zeros, 100, o).indices);
  auto bad = x;
  bad[4321] = std::numeric_limits<float>::quiet_NaN();
  const kf::Status st = run_device(bad, 10, o, &p);
  EXPECT_EQ(st.code(), KF_ERR_INVALID_ARGUMENT);
  EXPECT_NE(st.message().find("x[4321]"), std::string::npos) << st.message();
}

}  // namespace

int main(int argc, char** argv) {
  std::string why;
  if (!kf::cuda::device_available(&why)) {
    std::printf("SKIP: the CUDA MSTopK test needs a CUDA device: %s\n", why.c_str());
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
