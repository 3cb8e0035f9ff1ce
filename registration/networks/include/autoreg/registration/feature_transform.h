// Feature-wise transformation layers (FTM; Chen, Chen & Luo 2022, "Feature Transformation
// for Cross-domain Few-shot Remote Sensing Scene Classification"; Tseng et al., ICLR 2020,
// "Cross-domain few-shot classification via learned feature-wise transformation"): a
// per-channel scale γ and shift β of a feature map, y = γ ⊙ x + β, after every operation
// of a network (each edge of the AutoReg cells, each block of the U-Net). At γ = 1, β = 0
// (how they start) a network computes what it computed without them. Adapting a model to
// a new scanner trains γ and β alone (autoreg adapt --method ftm: 2 parameters a
// channel, the weights frozen); training with feature noise (train --feature-noise S)
// perturbs them at random in every training step, so the network learns features that
// survive such shifts.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <cstdint>

namespace autoreg::registration {

class FeatureTransformImpl : public torch::nn::Module {
 public:
  explicit FeatureTransformImpl(int64_t channels);
  // x: N×C×D×H×W. In training mode with noise S > 0, the channels get γ (1 + S ε₁) and
  // β + S σ ε₂, ε ~ N(0, 1) from torch's default generator, one draw for the whole batch
  // (a pair's two scans share a scanner); σ is the channel's standard deviation in x.
  at::Tensor forward(const at::Tensor& x);
  at::Tensor gamma, beta;  // C each
  double noise = 0;
};
TORCH_MODULE(FeatureTransform);

}  // namespace autoreg::registration
