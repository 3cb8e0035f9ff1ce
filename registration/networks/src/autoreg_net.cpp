#include "autoreg/registration/autoreg_net.h"

#include <ATen/ATen.h>

#include <string>

#include "autoreg/ops.h"
#include "autoreg/registration/operations.h"

namespace autoreg::registration {
namespace {

// The mean absolute difference of two feature maps over channels: N×1×D×H×W.
at::Tensor matching_cost(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).abs().mean(1, /*keepdim=*/true);
}

}  // namespace

std::array<EdgeLayout, kGenotypeEdges> edge_layout(bool matching_cost) {
  const int64_t cost = matching_cost ? 1 : 0;
  // The coarse cell sees both images' 1/4-scale features; the fine cell the warped and
  // fixed 1/2-scale features, the coarse field and the coarse cell's upsampled features.
  const int64_t coarse_in = 32 + 32 + cost, fine_in = 16 + 16 + 3 + 16 + cost;
  return {{{"F0", 1, 16, 2, 1, 2},
           {"F1", 16, 16, 1, 2, 2},
           {"F2", 16, 16, 1, 2, 2},
           {"F3", 16, 32, 2, 2, 2},
           {"F4", 32, 32, 1, 4, 2},
           {"F5", 32, 32, 1, 4, 2},
           {"D4_0", coarse_in, 48, 1, 4, 1},
           {"D4_1", 48, 32, 1, 4, 1},
           {"D4_2", 32, 16, 1, 4, 1},
           {"D2_0", fine_in, 48, 1, 2, 1},
           {"D2_1", 48, 32, 1, 2, 1},
           {"D2_2", 32, 16, 1, 2, 1}}};
}

Edge plain_edge(const std::string& name, const EdgeLayout& layout) {
  torch::nn::Sequential edge = make_edge(name, layout.in, layout.out, layout.stride);
  return {edge.ptr(), [m = edge.ptr()](const at::Tensor& x) { return m->forward(x); }};
}

AutoRegNet::AutoRegNet(const NetworkSpec& spec, const EdgeFactory& factory) : spec_(spec) {
  const auto layout = edge_layout(spec.matching_cost);
  // Built (and so initialised from the generator, and listed in parameters()) in the
  // order the network has always used: the feature cell, then the two deformation
  // cells' edges side by side.
  const int order[kGenotypeEdges] = {0, 1, 2, 3, 4, 5, 6, 9, 7, 10, 8, 11};
  for (int e : order) {
    const EdgeLayout& l = layout[e];
    edges_[e] = factory ? factory(e, l) : plain_edge(spec.genotype.edges[e], l);
    register_module(l.name, edges_[e].module);
  }
  coarse_head_ = register_module("D4_flow", make_flow_head(16));
  fine_head_ = register_module("D2_flow", make_flow_head(16));
}

std::vector<std::pair<std::string, int64_t>> AutoRegNet::operations() const {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const EdgeLayout& l : edge_layout(spec_.matching_cost)) out.emplace_back(l.name, l.out);
  return out;
}

std::array<at::Tensor, 2> AutoRegNet::features(const at::Tensor& image) {
  at::Tensor x = image;
  std::array<at::Tensor, 2> out;
  for (int e = 0; e < 6; ++e) {
    x = transformed(e, edges_[e].forward(x));
    if (e == 2) out[0] = x;
  }
  out[1] = x;
  return out;
}

at::Tensor AutoRegNet::field(const at::Tensor& velocity) {
  return spec_.diffeomorphic ? ops::integrate(velocity, spec_.integration_steps) : velocity;
}

at::Tensor AutoRegNet::forward(const at::Tensor& moving, const at::Tensor& fixed) {
  return run(moving, fixed, false)[0];
}

std::array<at::Tensor, 2> AutoRegNet::forward_with_inverse(const at::Tensor& moving, const at::Tensor& fixed) {
  if (!spec_.diffeomorphic) throw_no_inverse();
  return run(moving, fixed, true);
}

std::array<at::Tensor, 2> AutoRegNet::run(const at::Tensor& moving, const at::Tensor& fixed, bool inverse) {
  check_network_input(moving, fixed, size_multiple());
  const int64_t n = moving.size(0);
  // Siamese: both images through the one feature cell, as one batch.
  const auto both = features(at::cat({moving, fixed}, 0));
  const at::Tensor m2 = both[0].narrow(0, 0, n), f2 = both[0].narrow(0, n, n);
  const at::Tensor m4 = both[1].narrow(0, 0, n), f4 = both[1].narrow(0, n, n);

  std::vector<at::Tensor> coarse_in = {m4, f4};
  if (spec_.matching_cost) coarse_in.push_back(matching_cost(m4, f4));
  at::Tensor x = at::cat(coarse_in, 1);
  for (int e = 6; e < 9; ++e) x = transformed(e, edges_[e].forward(x));
  const at::Tensor coarse_velocity = coarse_head_->forward(x);
  const at::Tensor coarse = upsample_field(field(coarse_velocity));  // 1/2 voxels
  const at::Tensor x_up = at::upsample_trilinear3d(
      x, {2 * x.size(2), 2 * x.size(3), 2 * x.size(4)}, /*align_corners=*/false);

  const at::Tensor m2_warped = ops::warp(m2, coarse, ops::Interpolation::Linear, ops::Padding::Border);
  std::vector<at::Tensor> fine_in = {m2_warped, f2, coarse, x_up};
  if (spec_.matching_cost) fine_in.push_back(matching_cost(m2_warped, f2));
  at::Tensor y = at::cat(fine_in, 1);
  for (int e = 9; e < 12; ++e) y = transformed(e, edges_[e].forward(y));
  const at::Tensor fine_velocity = fine_head_->forward(y);
  const at::Tensor fine = field(fine_velocity);
  // The fine field acts on the coarsely warped moving image: first fine, then coarse.
  // The inverse undoes the coarse map first, then the fine one.
  at::Tensor undo;
  if (inverse) {
    const at::Tensor coarse_inverse = upsample_field(field(-coarse_velocity));
    undo = upsample_field(ops::compose(field(-fine_velocity), coarse_inverse));
  }
  return {upsample_field(ops::compose(coarse, fine)), undo};
}

}  // namespace autoreg::registration
