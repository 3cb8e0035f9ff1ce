#include "similarity_check.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "autoreg/io/mapped.h"
#include "autoreg/registration/similarity.h"

namespace autoreg::pipeline::detail {
namespace {

// Every f-th voxel of the grid along each axis (f from the spacing: about 3 mm), starting
// at f/2: its geometry, and the voxels it keeps of a tensor on the full grid.
struct Subgrid {
  io::Geometry geometry;
  std::array<int64_t, 3> step{}, first{};  // along i, j, k
  at::Tensor of(const at::Tensor& t) const {
    return t.slice(2, first[2], at::indexing::None, step[2])
        .slice(3, first[1], at::indexing::None, step[1])
        .slice(4, first[0], at::indexing::None, step[0])
        .contiguous();
  }
};

Subgrid subgrid(const io::Geometry& g) {
  Subgrid s;
  s.geometry = g;
  for (int a = 0; a < 3; ++a) {
    s.step[a] = std::clamp<int64_t>(std::llround(3.0 / std::max(1e-6, g.spacing[a])), 1, std::max<int64_t>(1, g.size[a] / 8));
    s.first[a] = s.step[a] / 2;
    s.geometry.size[a] = (g.size[a] - s.first[a] + s.step[a] - 1) / s.step[a];
    s.geometry.spacing[a] = g.spacing[a] * double(s.step[a]);
  }
  for (int r = 0; r < 3; ++r) {  // origin: the world point of voxel `first`
    s.geometry.origin[r] = g.origin[r];
    for (int c = 0; c < 3; ++c) s.geometry.origin[r] += g.direction[r * 3 + c] * g.spacing[c] * double(s.first[c]);
  }
  return s;
}

// The fixed image and the moving one carried onto the subgrid of `grid`, and the weight of
// each point: inside the fixed mask, and its match inside the moving volume and mask.
struct Sampled {
  at::Tensor fixed, moving, weight;
};

Sampled sampled(const at::Tensor& fixed, const io::Geometry& grid, const io::Volume& moving, const at::Tensor& affine,
                const at::Tensor& displacement, const PairMasks& masks) {
  const Subgrid sub = subgrid(grid);
  // The map on the subgrid, in its voxels: the full grid's displacement at the kept voxels, over the step.
  at::Tensor u;
  if (displacement.defined()) {
    const at::Tensor steps = at::tensor({double(sub.step[2]), double(sub.step[1]), double(sub.step[0])}, at::kFloat);
    u = sub.of(displacement.cpu()) / steps.view({1, 3, 1, 1, 1});
  }
  Sampled s;
  s.fixed = sub.of(fixed.cpu().to(at::kFloat));
  s.moving = io::sample_mapped({moving.data.cpu(), moving.geometry}, sub.geometry, affine, u);
  const at::Tensor moving_inside = masks.moving.defined() ? masks.moving.cpu() : at::ones_like(moving.data.cpu());
  s.weight = io::sample_mapped({moving_inside, moving.geometry}, sub.geometry, affine, u).gt(0.5).to(at::kFloat);
  if (masks.fixed.defined()) s.weight = s.weight * sub.of(masks.fixed.cpu()).gt(0.5).to(at::kFloat);
  return s;
}

double entropy(const at::Tensor& p) {
  const at::Tensor q = p.masked_select(p.gt(0));
  return -(q * q.log()).sum().item<double>();
}

}  // namespace

double mapped_similarity_loss(registration::Similarity kind, const at::Tensor& fixed, const io::Geometry& grid,
                              const io::Volume& moving, const at::Tensor& affine, const at::Tensor& displacement,
                              const PairMasks& masks) {
  c10::AutoGradMode no_grad(false);
  const Sampled s = sampled(fixed, grid, moving, affine, displacement, masks);
  if (s.weight.sum().item<double>() < 1) return std::numeric_limits<double>::quiet_NaN();
  return registration::similarity_loss(kind, s.fixed, s.moving, 5, s.weight).item<double>();
}

double mapped_mutual_information(const at::Tensor& fixed, const io::Geometry& grid, const io::Volume& moving,
                                 const at::Tensor& affine, const at::Tensor& displacement, const PairMasks& masks) {
  c10::AutoGradMode no_grad(false);
  const Sampled s = sampled(fixed, grid, moving, affine, displacement, masks);
  const at::Tensor inside = s.weight.reshape(-1).gt(0.5);
  if (inside.sum().item<int64_t>() < 1) return std::numeric_limits<double>::quiet_NaN();
  const int64_t n = kMutualInformationBins;
  const auto bin = [n, &inside](const at::Tensor& t) {
    return (t.reshape(-1).masked_select(inside).clamp(0, 1) * double(n)).floor().clamp_max(double(n - 1)).to(at::kLong);
  };
  const at::Tensor joint = at::bincount(bin(s.fixed) * n + bin(s.moving), {}, n * n).to(at::kDouble).view({n, n});
  const at::Tensor p = joint / joint.sum();
  const double h = entropy(p);
  return h > 0 ? (entropy(p.sum(1)) + entropy(p.sum(0))) / h : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace autoreg::pipeline::detail
