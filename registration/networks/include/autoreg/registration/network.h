// The contract every registration network keeps, and how one is built from its
// description. Networks: the AutoReg cell network (autoreg_net.h) and the
// VoxelMorph-style U-Net baseline (unet.h).
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autoreg/registration/feature_transform.h"
#include "autoreg/registration/genotype.h"

namespace autoreg::registration {

// Input: moving and fixed, 1×1×D×H×W each (N×1×D×H×W for a batch), one grid, D, H, W
// multiples of 4 (the networks halve the grid twice, the U-Net four times: 16), intensities
// normalised to about [0, 1]. Output: the displacement u, N×3×D×H×W in voxels of that
// grid, such that warp(moving, u) ≈ fixed.
class RegistrationNetwork : public torch::nn::Module {
 public:
  virtual at::Tensor forward(const at::Tensor& moving, const at::Tensor& fixed) = 0;
  // {u, u⁻¹}: the displacement and that of its inverse map (x + u⁻¹(x) undoes x + u(x)),
  // both on the input grid in its voxels. The inverse integrates each velocity field
  // backwards (exp(−v)) and composes the parts in the reverse order, so it is the
  // model's own inverse, not a numerical inversion of u. Throws std::logic_error for a
  // network that is not diffeomorphic (its fields are not velocities).
  virtual std::array<at::Tensor, 2> forward_with_inverse(const at::Tensor& moving, const at::Tensor& fixed) = 0;
  // The multiple that every spatial size must be.
  virtual int64_t size_multiple() const = 0;

  // The operations a feature-wise transformation may follow (feature_transform.h), in
  // the order the network runs them: their names and output channels.
  virtual std::vector<std::pair<std::string, int64_t>> operations() const = 0;
  // Adds an identity transformation after every operation (the module "ftm", parameters
  // "ftm.<operation>.gamma" and ".beta", listed after every weight of the network);
  // once only. The network's output stays what it was until γ or β change.
  void add_feature_transforms();
  bool has_feature_transforms() const { return !transforms_.empty(); }
  // γ and β of every transformation (empty without them).
  std::vector<at::Tensor> feature_transform_parameters() const;
  // The parameters that are not γ or β: the network's weights.
  std::vector<at::Tensor> weight_parameters() const;
  // Feature noise in training mode (FeatureTransformImpl::forward); needs the transforms.
  void set_feature_noise(double noise);

 protected:
  // The output of operation `index` (operations()' order), transformed when the network
  // has the transformations.
  at::Tensor transformed(size_t index, const at::Tensor& x) {
    return transforms_.empty() ? x : transforms_[index]->forward(x);
  }

 private:
  std::vector<FeatureTransform> transforms_;
};

// FNV-1a 64 of the network's weights (feature transformations left out), in
// parameters() order, as 16 hex digits: what a model adapted from it records, and what
// adaptation that freezes the weights leaves as it was.
std::string weights_checksum(const RegistrationNetwork& network);

// What a network is, enough to rebuild it (the weights aside): stored in model files.
struct NetworkSpec {
  std::string kind = "autoreg";          // "autoreg" or "unet"
  Genotype genotype = Genotype::standard();  // autoreg only
  bool diffeomorphic = true;             // integrate velocity fields (scaling and squaring)
  int64_t integration_steps = 7;
  bool matching_cost = true;             // autoreg: an L1 matching-cost channel into each D cell
  bool feature_transforms = false;       // γ, β after every operation (feature_transform.h)
};

// A freshly initialised network (weights from the current torch seed).
std::shared_ptr<RegistrationNetwork> make_network(const NetworkSpec& spec);

// Throws std::invalid_argument unless every spatial size of `image` (N×1×D×H×W) is a
// positive multiple of `multiple`.
void check_network_input(const at::Tensor& moving, const at::Tensor& fixed, int64_t multiple);

// The error forward_with_inverse throws for a network that is not diffeomorphic.
[[noreturn]] void throw_no_inverse();

// A displacement of `u`'s grid on a grid twice as fine along every axis (trilinear),
// in voxels of the finer grid.
at::Tensor upsample_field(const at::Tensor& u);

}  // namespace autoreg::registration
