// One searched edge of the supernet (supernet.h): the 8 candidate operations, run as the
// shared PathState says, with entangled weights (Single-Path NAS's superkernel,
// Stamoulis et al. 2019; OFA's elastic kernel, Cai et al. 2020): one 7³ dense kernel of
// which conv_1x1/3x3/5x5 are the centre 1³/3³/5³ at dilation 1 and dil_conv_3x3/5x5/7x7
// the centre 3³/5³/7³ at dilation 2, and one 5³ depthwise kernel (centre 3³ for
// sep_conv_3x3) with one pointwise kernel for the two separable candidates.
//
// The shells outside each kernel's centre 3³ start at zero, so every candidate starts as
// the 3³ one and inherits what the warm-up on the default path (all 3³) trained.
//
// Measured on OASIS-TRT at 40×40×48 (4 mm), 600 steps of ω alone: the default network's
// NCC loss fell 0.69 → 0.54; a supernet trained on sampled paths stayed at 0.70 with
// independent candidates and with shared ones alike (docs/search.md); with shared
// kernels, the default-path warm-up and the mixed path it kept falling (0.575 → 0.562).
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <map>
#include <memory>
#include <string>

#include "autoreg/registration/autoreg_net.h"
#include "autoreg/search/supernet.h"

namespace autoreg::search {

class MixedEdgeImpl : public torch::nn::Module {
 public:
  MixedEdgeImpl(int index, const registration::EdgeLayout& layout, std::shared_ptr<const PathState> state);
  at::Tensor forward(const at::Tensor& x);
  // Candidate k alone (operation + LeakyReLU) with the shared weights.
  at::Tensor candidate(int k, const at::Tensor& x) const;
  // Candidate k's weights under the names a plain edge (registration::make_edge) gives
  // them: "0.weight", "0.bias" (and "1.weight", "1.bias" for a separable one).
  std::map<std::string, at::Tensor> plain_weights(int k) const;

 private:
  int index_;
  int64_t stride_;
  std::shared_ptr<const PathState> state_;
  at::Tensor dense_weight_, dense_bias_;          // out × in × 7³, out
  at::Tensor depthwise_weight_, depthwise_bias_;  // in × 1 × 5³, in
  at::Tensor pointwise_weight_, pointwise_bias_;  // out × in × 1³, out
};
TORCH_MODULE(MixedEdge);

}  // namespace autoreg::search
