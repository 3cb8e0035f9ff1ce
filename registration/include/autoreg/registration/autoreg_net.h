// The AutoReg registration network (DESIGN.md, "The method"): a Siamese feature cell F
// (1/2- and 1/4-scale features of both images), a deformation cell D at 1/4 scale that
// predicts a coarse field from the two images' features and their matching cost, and a
// deformation cell D at 1/2 scale that refines it from the moving features warped by the
// coarse field. Each D cell ends in a flow head (3³ conv, 16 → 3); fields are velocity
// fields integrated by scaling and squaring (diffeomorphic mode) or used as they are;
// the 1/2-scale field is composed with the coarse one and upsampled to full resolution.
// The operation on each of the 12 edges comes from the genotype.
#pragma once

#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>

#include <array>

#include "autoreg/registration/network.h"
#include "autoreg/registration/operations.h"

namespace autoreg::registration {

class AutoRegNet : public RegistrationNetwork {
 public:
  explicit AutoRegNet(const NetworkSpec& spec);
  at::Tensor forward(const at::Tensor& moving, const at::Tensor& fixed) override;
  int64_t size_multiple() const override { return 4; }

 private:
  // (1/2-scale, 1/4-scale) features of one image.
  std::array<at::Tensor, 2> features(const at::Tensor& image);
  at::Tensor field(const at::Tensor& velocity);  // integrated in diffeomorphic mode

  NetworkSpec spec_;
  std::array<torch::nn::Sequential, 6> feature_edges_;
  std::array<torch::nn::Sequential, 3> coarse_edges_, fine_edges_;
  FastConv3d coarse_head_{nullptr}, fine_head_{nullptr};
};

}  // namespace autoreg::registration
