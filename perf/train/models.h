// Per-layer tables of three real models for the synthetic training loop:
// parameter counts derived from the architectures' layer shapes, and the
// forward FLOPs of each layer per sample, from which the loop derives
// V100-class compute times (models.cc explains the derivation).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kftrain {

struct Layer {
  std::string name;     // e.g. "conv3_2b" or "enc7.ffn"
  uint64_t params;      // gradient elements (fp32) of this layer
  double fwd_flops;     // forward FLOPs per sample (2 x multiply-adds)
};

struct Model {
  std::string name;          // resnet50, vgg16, bert
  std::vector<Layer> layers; // in forward order (layer 0 = input side)
  uint64_t expected_params;  // the published total, checked by models_check
  std::string sample;        // what one sample is, e.g. "224x224 image"

  uint64_t total_params() const;
  double total_fwd_flops() const;
};

Model resnet50();
Model vgg16();
Model bert_base();
// "resnet50", "vgg16" or "bert"; false if unknown.
bool model_by_name(const std::string& name, Model* out);

// Forward and backward time of each layer on a V100-class GPU for a batch of
// `batch` samples. Backward costs twice the forward FLOPs (gradients with
// respect to inputs and to weights), so a layer's training step costs 3x its
// forward FLOPs; time = FLOPs / `flops_per_s` (achieved, not peak).
struct LayerTimes {
  std::vector<double> fwd_s;
  std::vector<double> bwd_s;
  double total_s() const;
};
LayerTimes v100_times(const Model& m, int batch, double flops_per_s);

// Achieved FP32 rate of a V100 (SXM2, 15.7 TFLOP/s peak) in training,
// 60% of peak: see models.cc for the cross-check against published figures.
constexpr double kV100AchievedFlops = 9.4e12;

}  // namespace kftrain
