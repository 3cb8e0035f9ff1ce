// Instance optimisation recovers a known smooth deformation of a synthetic volume.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <array>
#include <vector>

#include "autoreg/ops.h"
#include "autoreg/registration/instance.h"

namespace autoreg::test {
namespace {

namespace reg = autoreg::registration;

TEST(FitDisplacement, RecoversAKnownSmoothDeformation) {
  at::manual_seed(2);
  const int64_t S = 32;
  // A "brain": blurred random blobs, with structure at several scales.
  const at::Tensor noise = at::rand({1, 1, 8, 8, 8});
  const at::Tensor fixed = at::upsample_trilinear3d(noise, {S, S, S}, true);
  // The truth: moving = fixed pulled back through the inverse of a smooth deformation,
  // so that moving(x + u(x)) ≈ fixed(x) for u = exp(v).
  const at::Tensor v = at::upsample_trilinear3d((at::rand({1, 3, 4, 4, 4}) * 2 - 1) * 2.0, {S, S, S}, true);
  const at::Tensor truth = ops::integrate(v, 7);
  const at::Tensor moving = ops::warp(fixed, ops::integrate(-v, 7), ops::Interpolation::Linear,
                                      ops::Padding::Border);
  reg::InstanceOptions o;
  o.iterations = {60, 60};
  o.similarity = "mse";
  o.regularization = 0.05;
  const at::Tensor u = reg::fit_displacement(fixed, moving, o);
  const auto inner = [&](const at::Tensor& t) {
    return t.narrow(2, 4, S - 8).narrow(3, 4, S - 8).narrow(4, 4, S - 8);
  };
  const double before = inner(fixed - moving).pow(2).mean().item<double>();
  const double after =
      inner(fixed - ops::warp(moving, u, ops::Interpolation::Linear, ops::Padding::Border)).pow(2).mean().item<double>();
  EXPECT_LT(after, 0.3 * before);
  // Closer to the true field than the identity is.
  const double err_identity = inner(truth).pow(2).sum(1).sqrt().mean().item<double>();
  const double err_fit = inner(u - truth).pow(2).sum(1).sqrt().mean().item<double>();
  EXPECT_LT(err_fit, 0.6 * err_identity);
  // And diffeomorphic.
  EXPECT_GT(ops::jacobian_determinant(u).min().item<double>(), 0.0);
}

using Plan = std::vector<std::array<int64_t, 3>>;

TEST(Pyramid, IsotropicOrUnknownSpacingShrinksEveryAxisAlike) {
  EXPECT_EQ(reg::pyramid_factors(2, {1, 1, 1}), (Plan{{4, 4, 4}, {2, 2, 2}, {2, 2, 2}}));
  EXPECT_EQ(reg::pyramid_factors(2, {0, 0, 0}), (Plan{{4, 4, 4}, {2, 2, 2}, {2, 2, 2}}));
  // Within 1.5× of the finest: as isotropic (a 1.2 mm axis among 1 mm ones).
  EXPECT_EQ(reg::pyramid_factors(2, {1.2, 1, 1}), (Plan{{4, 4, 4}, {2, 2, 2}, {2, 2, 2}}));
  EXPECT_EQ(reg::pyramid_factors(4, {2, 2, 2}), (Plan{{16, 16, 16}, {8, 8, 8}, {4, 4, 4}, {2, 2, 2}, {2, 2, 2}}));
}

TEST(Pyramid, ThickSlicesGetNearCubicVoxelsOfTheEvenShrinksVolume) {
  // The liver slab: 4 mm slices (D), 1.37 mm in plane; geometric mean 1.96 mm. At 1/4 the
  // voxels are 8 × 8.2 × 8.2 mm (the even plan's: 16 × 5.5 × 5.5), and the half-resolution
  // grid keeps the slices (4 × 4.1 × 4.1 mm).
  EXPECT_EQ(reg::pyramid_factors(4, {4, 1.37, 1.37}), (Plan{{8, 23, 23}, {4, 11, 11}, {2, 6, 6}, {1, 3, 3}, {1, 3, 3}}));
  // A clinical T2 (0.43 × 0.43 × 2.5 mm, the thick axis W): worked on at 1.7 mm in plane,
  // not 0.86, so thick slices cost no more than an even shrink would.
  EXPECT_EQ(reg::pyramid_factors(2, {0.43, 0.43, 2.5}), (Plan{{7, 7, 1}, {4, 4, 1}, {4, 4, 1}}));
}

TEST(FitDisplacement, AThickSlabKeepsItsSlicesAndAnyNumberOfLevelsFits) {
  at::manual_seed(3);
  // 6 slices of 4 mm, 40×40 of 1.37 mm: the velocity's grid keeps the 6 slices (1, 3, 3).
  const at::Tensor fixed = at::upsample_trilinear3d(at::rand({1, 1, 3, 6, 6}), {6, 40, 40}, true);
  const at::Tensor shift = at::zeros({1, 3, 6, 40, 40});
  shift.narrow(1, 2, 1).fill_(1.5);  // 1.5 voxels along W
  const at::Tensor moving = ops::warp(fixed, -shift, ops::Interpolation::Linear, ops::Padding::Border);
  reg::InstanceOptions o;
  o.similarity = "mse";
  o.regularization = 0.05;
  o.spacing = {4, 1.37, 1.37};
  for (const std::vector<int64_t>& levels : {std::vector<int64_t>{40}, {30, 30}, {20, 20, 20, 20}}) {
    o.iterations = levels;
    const at::Tensor half = reg::fit_half_displacement(fixed, moving, o);
    EXPECT_EQ(half.sizes(), (at::IntArrayRef{1, 3, 6, 14, 14})) << levels.size() << " levels";
    const at::Tensor u = reg::fit_displacement(fixed, moving, o);
    const auto inner = [](const at::Tensor& t) { return t.narrow(3, 6, 28).narrow(4, 6, 28); };
    const double before = inner(fixed - moving).pow(2).mean().item<double>();
    const double after =
        inner(fixed - ops::warp(moving, u, ops::Interpolation::Linear, ops::Padding::Border)).pow(2).mean().item<double>();
    EXPECT_LT(after, 0.5 * before) << levels.size() << " levels";
  }
}

}  // namespace
}  // namespace autoreg::test
