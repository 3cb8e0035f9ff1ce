// The AutoReg registration network (docs/design.md, "The method"): a Siamese feature cell F
// (1/2- and 1/4-scale features of both images), a deformation cell D at 1/4 scale that
// predicts a coarse field from the two images' features and their matching cost, and a
// deformation cell D at 1/2 scale that refines it from the moving features warped by the
// coarse field. Each D cell ends in a flow head (3³ conv, 16 → 3); fields are velocity
// fields integrated by scaling and squaring (diffeomorphic mode) or used as they are;
// the 1/2-scale field is composed with the coarse one and upsampled to full resolution.
// The operation on each of the 12 edges comes from the genotype, or from an edge factory:
// the architecture search builds its supernet as this network with mixed edges, so the
// cells are written once.
#pragma once

#include <torch/nn/modules/conv.h>

#include <array>
#include <functional>
#include <memory>

#include "autoreg/registration/network.h"
#include "autoreg/registration/operations.h"

namespace autoreg::registration {

// Where an edge sits in the network: its name ("F0".."F5", "D4_0".."D4_2", "D2_0".."D2_2"),
// channels, stride, the scale of its input (1 = the model grid, 2 = half, 4 = quarter) and
// its batch (2 in the Siamese feature cell, which sees both images at once).
struct EdgeLayout {
  const char* name;
  int64_t in, out, stride, scale, batch;
};

// The 12 edges in genotype order; the D cells' first inputs depend on the matching cost.
std::array<EdgeLayout, kGenotypeEdges> edge_layout(bool matching_cost);

// One edge: its module (registered under the edge's name, so its weights are saved and
// trained) and how to run it.
struct Edge {
  std::shared_ptr<torch::nn::Module> module;
  std::function<at::Tensor(const at::Tensor&)> forward;
};
// Builds edge `index`.
using EdgeFactory = std::function<Edge(int index, const EdgeLayout& layout)>;

// A plain edge: make_edge(name, ...) at the layout's channels and stride.
Edge plain_edge(const std::string& name, const EdgeLayout& layout);

class AutoRegNet : public RegistrationNetwork {
 public:
  // Edges from `factory` when given, else make_edge(spec.genotype's operation).
  explicit AutoRegNet(const NetworkSpec& spec, const EdgeFactory& factory = {});
  at::Tensor forward(const at::Tensor& moving, const at::Tensor& fixed) override;
  std::array<at::Tensor, 2> forward_with_inverse(const at::Tensor& moving, const at::Tensor& fixed) override;
  int64_t size_multiple() const override { return 4; }
  // The 12 edges in genotype order (F0–F5, D4_0–D4_2, D2_0–D2_2).
  std::vector<std::pair<std::string, int64_t>> operations() const override;

 private:
  // The forward displacement and, when `inverse`, that of its inverse (else undefined).
  std::array<at::Tensor, 2> run(const at::Tensor& moving, const at::Tensor& fixed, bool inverse);
  // (1/2-scale, 1/4-scale) features of one image.
  std::array<at::Tensor, 2> features(const at::Tensor& image);
  at::Tensor field(const at::Tensor& velocity);  // integrated in diffeomorphic mode

  NetworkSpec spec_;
  std::array<Edge, kGenotypeEdges> edges_;  // F0–F5, D4_0–D4_2, D2_0–D2_2
  FastConv3d coarse_head_{nullptr}, fine_head_{nullptr};
};

}  // namespace autoreg::registration
