// The candidate operations of the AutoReg search space (docs/design.md, "The method"): what
// one edge of a cell may be. Each is a convolution followed by LeakyReLU(0.2), with no
// normalisation, padded so that a stride-1 edge keeps the size and a stride-2 edge
// halves it (rounding up).
#pragma once

#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/pimpl.h>

#include <array>
#include <cstdint>
#include <string>

namespace autoreg::registration {

// The names a genotype uses, in a fixed order (the search's softmax follows it):
//   conv_1x1        1³ convolution
//   conv_3x3        3³ convolution
//   conv_5x5        5³ convolution
//   sep_conv_3x3    depthwise 3³ then pointwise 1³ convolution
//   sep_conv_5x5    depthwise 5³ then pointwise 1³ convolution
//   dil_conv_3x3    3³ convolution, dilation 2 (a 5³ field of view)
//   dil_conv_5x5    5³ convolution, dilation 2 (9³)
//   dil_conv_7x7    7³ convolution, dilation 2 (13³)
inline constexpr std::array<const char*, 8> kOperations = {
    "conv_1x1", "conv_3x3", "conv_5x5", "sep_conv_3x3",
    "sep_conv_5x5", "dil_conv_3x3", "dil_conv_5x5", "dil_conv_7x7"};

bool is_operation(const std::string& name);

// A 3-D convolution (torch's Conv3d parameters and initialisation) that on the CPU always
// runs oneDNN on channels-last activations: torch's own dispatch sends volumes with
// N·C·D·H ≤ 20480 to a native kernel 10× slower (its heuristic is tuned for 2-D), and
// channels-last runs 1.2–1.6× faster forward and backward on the 2-core machine.
// Elsewhere (CUDA) it is torch's Conv3d.
// The convolution FastConv3d runs (stride, padding and dilation the same on every axis):
// oneDNN on channels-last activations on the CPU, torch's conv3d elsewhere. For
// modules whose weights are computed (the search's shared kernels).
at::Tensor fast_conv3d(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias, int64_t stride,
                       int64_t padding, int64_t dilation, int64_t groups = 1);

class FastConv3dImpl : public torch::nn::Conv3dImpl {
 public:
  FastConv3dImpl(int64_t in, int64_t out, int64_t kernel, int64_t stride = 1, int64_t dilation = 1,
                 int64_t groups = 1);
  at::Tensor forward(const at::Tensor& input);

 private:
  int64_t padding_, stride_, dilation_, groups_;
};
TORCH_MODULE(FastConv3d);

// The flow head of a network: a 3³ convolution `in` → 3 whose initial output is almost
// zero (weights N(0, 1e-5), as voxelmorph's), so that an untrained network predicts the
// identity.
FastConv3d make_flow_head(int64_t in);

// One edge: operation `name` from `in` to `out` channels at `stride` (1 or 2), then
// LeakyReLU(0.2). Throws std::invalid_argument for an unknown name.
torch::nn::Sequential make_edge(const std::string& name, int64_t in, int64_t out, int64_t stride);

}  // namespace autoreg::registration
