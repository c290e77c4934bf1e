// The tables are computed from the layer shapes of each architecture, so the
// totals can be checked against the published parameter counts:
//   ResNet-50 (torchvision v1.5)      25,557,032   ~25.6M
//   VGG-16 (configuration D)          138,357,544  ~138.4M
//   BERT-base (uncased) + pooler      109,482,240  ~110M  (+1,538 classifier)
//
// Parameters. A "layer" is what a framework reduces as one gradient (or a
// small group of them): a convolution with its batch norm (ResNet), a conv or
// fc with its bias (VGG), an attention block or feed-forward block with its
// layer norm (BERT). Counts:
//   conv k x k, cin -> cout:           k*k*cin*cout (+ cout with bias)
//   batch norm / layer norm over C:    2*C (scale and shift; running
//                                      statistics are buffers, not gradients)
//   fully connected in -> out:         in*out + out
//
// Forward FLOPs per sample (2 per multiply-add; element-wise work ignored):
//   conv: 2*k*k*cin*cout*Hout*Wout;   fc: 2*in*out (x tokens for BERT)
//   attention over L tokens, hidden h: projections 4 * 2*h*h*L, scores and
//   weighted sum 2 * 2*L*L*h.
//
// Compute times (v100_times): training FLOPs (3x forward) / achieved rate.
// kV100AchievedFlops = 9.4e12 FLOP/s FP32, i.e. 60% of the V100 SXM2 peak of
// 15.7 TFLOP/s. Cross-check: ResNet-50 needs 3 x 8.2 = 24.6 GFLOP per image,
// so 9.4 TFLOP/s gives ~380 images/s, the FP32 training throughput NVIDIA
// publishes for one V100 (DeepLearningExamples, ResNet-50 v1.5, FP32, ~360-
// 400 img/s depending on framework). For batch 32 this gives per iteration:
// ResNet-50 ~84 ms, VGG-16 ~317 ms (15.5 GMAC forward per image), BERT-base
// (sequence 128) ~228 ms. The same rate is used for all three models: VGG's
// large convolutions run somewhat above it, BERT's attention somewhat below.
#include "models.h"

#include <numeric>

namespace kftrain {
namespace {

double conv_flops(int k, uint64_t cin, uint64_t cout, uint64_t hw_out) {
  return 2.0 * k * k * static_cast<double>(cin) * static_cast<double>(cout) *
         static_cast<double>(hw_out) * static_cast<double>(hw_out);
}

}  // namespace

uint64_t Model::total_params() const {
  uint64_t n = 0;
  for (const auto& l : layers) n += l.params;
  return n;
}

double Model::total_fwd_flops() const {
  double f = 0;
  for (const auto& l : layers) f += l.fwd_flops;
  return f;
}

double LayerTimes::total_s() const {
  return std::accumulate(fwd_s.begin(), fwd_s.end(), 0.0) +
         std::accumulate(bwd_s.begin(), bwd_s.end(), 0.0);
}

// ResNet-50 v1.5 (torchvision): conv1 7x7/2 + BN, max pool, then stages of
// 3, 4, 6, 3 bottlenecks (1x1 -> 3x3 -> 1x1 x4, stride on the 3x3, a 1x1
// projection with BN on the first block of each stage), global pool, fc.
Model resnet50() {
  Model m;
  m.name = "resnet50";
  m.expected_params = 25557032;
  m.sample = "224x224 image";
  m.layers.push_back({"conv1", 7 * 7 * 3 * 64 + 2 * 64, conv_flops(7, 3, 64, 112)});
  const int blocks[4] = {3, 4, 6, 3};
  const uint64_t widths[4] = {64, 128, 256, 512};
  uint64_t in = 64;
  uint64_t hw = 56;  // after the max pool
  for (int s = 0; s < 4; ++s) {
    const uint64_t w = widths[s];
    const uint64_t out = 4 * w;
    for (int b = 0; b < blocks[s]; ++b) {
      const std::string base = "conv" + std::to_string(s + 2) + "_" + std::to_string(b + 1);
      const bool down = (b == 0 && s > 0);
      const uint64_t hw_out = down ? hw / 2 : hw;
      m.layers.push_back({base + "a", in * w + 2 * w, conv_flops(1, in, w, hw)});
      m.layers.push_back({base + "b", 9 * w * w + 2 * w, conv_flops(3, w, w, hw_out)});
      m.layers.push_back({base + "c", w * out + 2 * out, conv_flops(1, w, out, hw_out)});
      if (b == 0) {
        m.layers.push_back({base + "_proj", in * out + 2 * out, conv_flops(1, in, out, hw_out)});
      }
      in = out;
      hw = hw_out;
    }
  }
  m.layers.push_back({"fc", 2048 * 1000 + 1000, 2.0 * 2048 * 1000});
  return m;
}

// VGG-16 (configuration D): 13 3x3 convolutions with bias in five blocks
// (64, 64 | 128, 128 | 256 x3 | 512 x3 | 512 x3, 2x2 max pool after each),
// then fc6 25088 -> 4096, fc7 4096 -> 4096, fc8 4096 -> 1000.
Model vgg16() {
  Model m;
  m.name = "vgg16";
  m.expected_params = 138357544;
  m.sample = "224x224 image";
  const int per_block[5] = {2, 2, 3, 3, 3};
  const uint64_t widths[5] = {64, 128, 256, 512, 512};
  uint64_t in = 3;
  uint64_t hw = 224;
  for (int blk = 0; blk < 5; ++blk) {
    for (int i = 0; i < per_block[blk]; ++i) {
      const uint64_t out = widths[blk];
      m.layers.push_back({"conv" + std::to_string(blk + 1) + "_" + std::to_string(i + 1),
                          9 * in * out + out, conv_flops(3, in, out, hw)});
      in = out;
    }
    hw /= 2;
  }
  m.layers.push_back({"fc6", 25088ull * 4096 + 4096, 2.0 * 25088 * 4096});
  m.layers.push_back({"fc7", 4096ull * 4096 + 4096, 2.0 * 4096 * 4096});
  m.layers.push_back({"fc8", 4096ull * 1000 + 1000, 2.0 * 4096 * 1000});
  return m;
}

// BERT-base: vocabulary 30522, hidden 768, 12 encoder layers, 12 heads,
// feed-forward 3072, 512 positions, 2 token types; a sample is a sequence
// of 128 tokens. Embeddings (word + position + type + layer norm) form layer
// 0; each encoder layer gives an attention block (Q, K, V, output
// projections + layer norm) and a feed-forward block (768 -> 3072 -> 768 +
// layer norm); then the pooler (768 -> 768) and a 2-way classifier.
Model bert_base() {
  Model m;
  m.name = "bert";
  m.expected_params = 109482240 + 1538;
  m.sample = "128-token sequence";
  const uint64_t h = 768, ff = 3072, vocab = 30522, pos = 512, types = 2;
  const double L = 128;
  m.layers.push_back({"embeddings", (vocab + pos + types) * h + 2 * h, 0.0});
  for (int i = 0; i < 12; ++i) {
    const std::string base = "enc" + std::to_string(i);
    const double dh = static_cast<double>(h);
    m.layers.push_back({base + ".attn", 4 * (h * h + h) + 2 * h,
                        4 * 2 * dh * dh * L + 2 * 2 * L * L * dh});
    m.layers.push_back({base + ".ffn", (h * ff + ff) + (ff * h + h) + 2 * h,
                        2 * 2 * dh * static_cast<double>(ff) * L});
  }
  m.layers.push_back({"pooler", h * h + h, 2.0 * h * h});
  m.layers.push_back({"classifier", h * 2 + 2, 2.0 * h * 2});
  return m;
}

bool model_by_name(const std::string& name, Model* out) {
  if (name == "resnet50") return *out = resnet50(), true;
  if (name == "vgg16") return *out = vgg16(), true;
  if (name == "bert" || name == "bert_base") return *out = bert_base(), true;
  return false;
}

LayerTimes v100_times(const Model& m, int batch, double flops_per_s) {
  LayerTimes t;
  for (const auto& l : m.layers) {
    const double fwd = l.fwd_flops * batch / flops_per_s;
    t.fwd_s.push_back(fwd);
    t.bwd_s.push_back(2 * fwd);
  }
  return t;
}

}  // namespace kftrain
