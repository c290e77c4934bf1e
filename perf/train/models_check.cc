// Checks the model tables: parameter totals equal the published counts,
// every layer has parameters, and the derived V100 iteration times for batch
// 32 are in the expected range. Prints the per-model summary.
#include <cstdio>

#include "models.h"

int main() {
  int bad = 0;
  for (const auto& m : {kftrain::resnet50(), kftrain::vgg16(), kftrain::bert_base()}) {
    const auto t = kftrain::v100_times(m, 32, kftrain::kV100AchievedFlops);
    std::printf("%-9s %3zu layers  %11llu params (published %llu)  %6.2f GFLOP fwd/sample  "
                "batch 32: %.0f ms\n",
                m.name.c_str(), m.layers.size(), static_cast<unsigned long long>(m.total_params()),
                static_cast<unsigned long long>(m.expected_params), m.total_fwd_flops() / 1e9,
                t.total_s() * 1e3);
    if (m.total_params() != m.expected_params) {
      std::printf("FAIL: %s total differs\n", m.name.c_str());
      ++bad;
    }
    for (const auto& l : m.layers) {
      if (l.params == 0) std::printf("FAIL: %s.%s has no parameters\n", m.name.c_str(), l.name.c_str()), ++bad;
    }
    if (t.total_s() < 0.05 || t.total_s() > 0.5) {
      std::printf("FAIL: %s iteration time out of range\n", m.name.c_str());
      ++bad;
    }
  }
  return bad ? 1 : 0;
}
