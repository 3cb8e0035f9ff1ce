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

AutoRegNet::AutoRegNet(const NetworkSpec& spec) : spec_(spec) {
  const auto& g = spec.genotype.edges;
  const int64_t f_in[6] = {1, 16, 16, 16, 32, 32}, f_out[6] = {16, 16, 16, 32, 32, 32};
  const int64_t f_stride[6] = {2, 1, 1, 2, 1, 1};
  for (int e = 0; e < 6; ++e) {
    feature_edges_[e] = register_module("F" + std::to_string(e),
                                        make_edge(g[e], f_in[e], f_out[e], f_stride[e]));
  }
  const int64_t cost = spec.matching_cost ? 1 : 0;
  const int64_t coarse_in = 32 + 32 + cost, fine_in = 16 + 16 + 3 + 16 + cost;
  const int64_t d_out[3] = {48, 32, 16};
  for (int e = 0; e < 3; ++e) {
    coarse_edges_[e] = register_module("D4_" + std::to_string(e),
                                       make_edge(g[6 + e], e == 0 ? coarse_in : d_out[e - 1], d_out[e], 1));
    fine_edges_[e] = register_module("D2_" + std::to_string(e),
                                     make_edge(g[9 + e], e == 0 ? fine_in : d_out[e - 1], d_out[e], 1));
  }
  coarse_head_ = register_module("D4_flow", make_flow_head(16));
  fine_head_ = register_module("D2_flow", make_flow_head(16));
}

std::array<at::Tensor, 2> AutoRegNet::features(const at::Tensor& image) {
  at::Tensor x = image;
  std::array<at::Tensor, 2> out;
  for (int e = 0; e < 6; ++e) {
    x = feature_edges_[e]->forward(x);
    if (e == 2) out[0] = x;
  }
  out[1] = x;
  return out;
}

at::Tensor AutoRegNet::field(const at::Tensor& velocity) {
  return spec_.diffeomorphic ? ops::integrate(velocity, spec_.integration_steps) : velocity;
}

at::Tensor AutoRegNet::forward(const at::Tensor& moving, const at::Tensor& fixed) {
  check_network_input(moving, fixed, size_multiple());
  const int64_t n = moving.size(0);
  // Siamese: both images through the one feature cell, as one batch.
  const auto both = features(at::cat({moving, fixed}, 0));
  const at::Tensor m2 = both[0].narrow(0, 0, n), f2 = both[0].narrow(0, n, n);
  const at::Tensor m4 = both[1].narrow(0, 0, n), f4 = both[1].narrow(0, n, n);

  std::vector<at::Tensor> coarse_in = {m4, f4};
  if (spec_.matching_cost) coarse_in.push_back(matching_cost(m4, f4));
  at::Tensor x = at::cat(coarse_in, 1);
  for (auto& e : coarse_edges_) x = e->forward(x);
  const at::Tensor coarse = upsample_field(field(coarse_head_->forward(x)));  // 1/2 voxels
  const at::Tensor x_up = at::upsample_trilinear3d(
      x, {2 * x.size(2), 2 * x.size(3), 2 * x.size(4)}, /*align_corners=*/false);

  const at::Tensor m2_warped = ops::warp(m2, coarse, ops::Interpolation::Linear, ops::Padding::Border);
  std::vector<at::Tensor> fine_in = {m2_warped, f2, coarse, x_up};
  if (spec_.matching_cost) fine_in.push_back(matching_cost(m2_warped, f2));
  at::Tensor y = at::cat(fine_in, 1);
  for (auto& e : fine_edges_) y = e->forward(y);
  const at::Tensor fine = field(fine_head_->forward(y));
  // The fine field acts on the coarsely warped moving image: first fine, then coarse.
  return upsample_field(ops::compose(coarse, fine));
}

}  // namespace autoreg::registration
