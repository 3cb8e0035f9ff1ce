// The baseline: a VoxelMorph-style U-Net (Balakrishnan et al., TMI 2019; voxelmorph's
// torch Unet with its default widths, encoder 16-32-32-32, decoder 32-32-32-32, then
// 32-16-16 at full resolution), on the concatenated moving and fixed images at full
// resolution: 3³ convolutions + LeakyReLU(0.2), max pooling down, nearest upsampling
// and skip connections up. A flow head (3³ conv, 16 → 3) gives a velocity field,
// integrated at half resolution (voxelmorph's int_downsize 2) in diffeomorphic mode.
// Same input and output contract as the AutoReg network.
#pragma once

#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>

#include <vector>

#include "autoreg/registration/network.h"
#include "autoreg/registration/operations.h"

namespace autoreg::registration {

class UNet : public RegistrationNetwork {
 public:
  explicit UNet(const NetworkSpec& spec);
  at::Tensor forward(const at::Tensor& moving, const at::Tensor& fixed) override;
  std::array<at::Tensor, 2> forward_with_inverse(const at::Tensor& moving, const at::Tensor& fixed) override;
  int64_t size_multiple() const override { return 16; }
  // enc0–enc3, dec0–dec3, rest0–rest2: each 3³ convolution + LeakyReLU.
  std::vector<std::pair<std::string, int64_t>> operations() const override;

 private:
  std::array<at::Tensor, 2> run(const at::Tensor& moving, const at::Tensor& fixed, bool inverse);
  NetworkSpec spec_;
  std::vector<torch::nn::Sequential> encoder_, decoder_, remaining_;
  std::vector<std::pair<std::string, int64_t>> operations_;
  FastConv3d flow_{nullptr};
};

}  // namespace autoreg::registration
