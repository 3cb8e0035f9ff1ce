// Instance optimisation recovers a known smooth deformation of a synthetic volume.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <array>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "autoreg/ops.h"
#include "autoreg/registration/instance.h"
#include "autoreg/registration/regularization.h"

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
  o.similarity = reg::Similarity::Mse;
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
  o.similarity = reg::Similarity::Mse;
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
  // Compared at full resolution on the finest level: the field is still on the
  // half-resolution grid, and aligns at least as well.
  o.iterations = {30, 30};
  o.full_resolution = true;
  EXPECT_EQ(reg::fit_half_displacement(fixed, moving, o).sizes(), (at::IntArrayRef{1, 3, 6, 14, 14}));
  const at::Tensor u = reg::fit_displacement(fixed, moving, o);
  const auto inner = [](const at::Tensor& t) { return t.narrow(3, 6, 28).narrow(4, 6, 28); };
  EXPECT_LT(inner(fixed - ops::warp(moving, u, ops::Interpolation::Linear, ops::Padding::Border)).pow(2).mean().item<double>(),
            0.5 * inner(fixed - moving).pow(2).mean().item<double>());
}

// Fine texture moved by 3 voxels: the coarse levels' own pooled images (1/8 of 32
// voxels) are blurred flat, so they barely see the motion; compared on the images of two
// levels finer (compare_finer) they follow it by the texture, and the field ends nearer
// the truth (0.26 against 0.40 voxels). The velocity stays on each level's grid (the
// half-resolution field's size).
TEST(FitDisplacement, CoarseLevelsComparedOnFinerImagesFollowALargeMotion) {
  at::manual_seed(8);
  const int64_t S = 32;
  const at::Tensor fixed = at::upsample_trilinear3d(at::rand({1, 1, 16, 16, 16}), {S, S, S}, true);
  at::Tensor truth = at::zeros({1, 3, S, S, S});
  truth.narrow(1, 2, 1).fill_(3.0);
  truth.narrow(1, 1, 1).fill_(-2.0);
  const at::Tensor moving = ops::warp(fixed, -truth, ops::Interpolation::Linear, ops::Padding::Border);
  const auto error = [&](const at::Tensor& u) {
    return (u - truth).narrow(2, 8, S - 16).narrow(3, 8, S - 16).narrow(4, 8, S - 16).pow(2).sum(1).sqrt().mean().item<double>();
  };
  reg::InstanceOptions o;
  o.iterations = {60, 60, 30};
  o.spacing = {1, 1, 1};
  o.learning_rate = 0.3;
  const double own = error(reg::fit_displacement(fixed, moving, o));
  o.compare_finer = 2;
  EXPECT_EQ(reg::fit_half_displacement(fixed, moving, o).sizes(), (at::IntArrayRef{1, 3, 16, 16, 16}));
  const double finer = error(reg::fit_displacement(fixed, moving, o));
  EXPECT_LT(finer, 0.8 * own) << "endpoint error: compared finer " << finer << " voxels, on the levels' own grids " << own;
}

// Two textured blocks sliding past each other (the upper half of H moved +2 voxels along
// W, the lower half −2): the total-variation regulariser lets the field change sharply at
// the interface, diffusion smears the two motions into each other there.
TEST(FitDisplacement, TotalVariationFollowsASlidingInterfaceBetterThanDiffusion) {
  at::manual_seed(5);
  const int64_t S = 32;
  const at::Tensor upper = at::upsample_trilinear3d(at::rand({1, 1, 8, 8, 8}), {S, S, S}, true);
  const at::Tensor lower = at::upsample_trilinear3d(at::rand({1, 1, 8, 8, 8}), {S, S, S}, true);
  const at::Tensor is_upper = (at::arange(S) < S / 2).to(at::kFloat).view({1, 1, 1, S, 1});
  const at::Tensor fixed = upper * is_upper + lower * (1 - is_upper);
  at::Tensor truth = at::zeros({1, 3, S, S, S});
  truth.narrow(1, 2, 1).copy_((is_upper * 4 - 2).expand({1, 1, S, S, S}));  // +2 above, −2 below
  const at::Tensor moving = ops::warp(fixed, -truth, ops::Interpolation::Linear, ops::Padding::Border);
  // The error of the field within 3 voxels of the interface, away from the W borders.
  const auto interface_error = [&](const at::Tensor& u) {
    return (u - truth).narrow(3, S / 2 - 3, 6).narrow(4, 6, S - 12).pow(2).sum(1).sqrt().mean().item<double>();
  };
  reg::InstanceOptions o;
  o.iterations = {60, 60};
  o.spacing = {1, 1, 1};
  o.regularizer = reg::Regularizer::Diffusion;
  const double diffusion = interface_error(reg::fit_displacement(fixed, moving, o));
  o.regularizer = reg::Regularizer::TotalVariation;
  const at::Tensor u = reg::fit_displacement(fixed, moving, o);
  const double tv = interface_error(u);
  EXPECT_LT(tv, 0.7 * diffusion) << "TV " << tv << " voxels, diffusion " << diffusion;
  EXPECT_LT(tv, interface_error(at::zeros_like(truth)));  // and better than no registration
}

// Cost-function masking: with MSE, a fixed image changed outside the fixed mask gives the
// same field bit for bit (the mask's edge on the pyramid's block boundaries); changed
// inside, another field.
TEST(FitDisplacement, ImageOutsideTheFixedMaskDoesNotChangeTheField) {
  at::manual_seed(6);
  const int64_t S = 32;
  const at::Tensor fixed = at::upsample_trilinear3d(at::rand({1, 1, 8, 8, 8}), {S, S, S}, true);
  const at::Tensor v = at::upsample_trilinear3d((at::rand({1, 3, 4, 4, 4}) * 2 - 1) * 1.5, {S, S, S}, true);
  const at::Tensor moving = ops::warp(fixed, ops::integrate(-v, 7), ops::Interpolation::Linear, ops::Padding::Border);
  reg::InstanceOptions o;
  o.iterations = {30, 30};
  o.similarity = reg::Similarity::Mse;
  o.regularization = 0.05;
  o.fixed_mask = at::zeros_like(fixed);
  o.fixed_mask.narrow(4, 0, 16).fill_(1);
  const at::Tensor u = reg::fit_half_velocity(fixed, moving, o);
  const at::Tensor noise = at::rand_like(fixed);
  EXPECT_TRUE(at::equal(reg::fit_half_velocity(fixed + noise * (1 - o.fixed_mask), moving, o), u));
  EXPECT_FALSE(at::equal(reg::fit_half_velocity(fixed + noise * o.fixed_mask, moving, o), u));
  // Inside the mask the pair is still aligned.
  const at::Tensor full = reg::fit_displacement(fixed, moving, o);
  const auto inside = [](const at::Tensor& t) { return t.narrow(2, 4, 24).narrow(3, 4, 24).narrow(4, 4, 10); };
  const double before = inside(fixed - moving).pow(2).mean().item<double>();
  const double after =
      inside(fixed - ops::warp(moving, full, ops::Interpolation::Linear, ops::Padding::Border)).pow(2).mean().item<double>();
  EXPECT_LT(after, 0.5 * before);
  o.moving_mask = at::ones({1, 1, 4, 4, 4});
  EXPECT_THROW(reg::fit_half_velocity(fixed, moving, o), c10::Error);
}

TEST(Smoothness, PhysicalUnitsOnAnisotropicGridsAndTotalVariationOfARamp) {
  // A ramp of 0.5 voxels per voxel along W in component W: diffusion 0.25 on any equal
  // spacing (gradient_l2), and TV √(0.25 + ε²) ≈ 0.5 where the ramp rises (not past the
  // last voxel), averaged over the 3 components of which one is non-zero.
  const at::Tensor ramp = at::zeros({1, 3, 4, 5, 6}, at::kDouble);
  ramp.narrow(1, 2, 1).copy_((at::arange(6, at::kDouble) * 0.5).view({1, 1, 1, 1, 6}).expand({1, 1, 4, 5, 6}));
  EXPECT_NEAR(reg::smoothness(ramp, reg::Regularizer::Diffusion, {2, 2, 2}).item<double>(),
              reg::gradient_l2(ramp).item<double>(), 1e-12);
  const double tv = reg::smoothness(ramp, reg::Regularizer::TotalVariation, {1, 1, 1}).item<double>();
  const double rise = std::sqrt(0.25 + 1e-6), flat = 1e-3;
  EXPECT_NEAR(tv, (2 * flat + (5 * rise + flat) / 6) / 3, 1e-9);
  // Along a 4 mm axis, a change of one voxel in a component along a 1 mm axis is 1/4 of
  // the same change along a 1 mm axis: the Jacobian entry is 0.25, its square 1/16.
  const at::Tensor step_d = at::zeros({1, 3, 4, 5, 6}, at::kDouble);
  step_d.narrow(1, 2, 1).copy_(at::arange(4, at::kDouble).view({1, 1, 4, 1, 1}).expand({1, 1, 4, 5, 6}));
  const double iso = reg::smoothness(step_d, reg::Regularizer::Diffusion, {1, 1, 1}).item<double>();
  const double thick = reg::smoothness(step_d, reg::Regularizer::Diffusion, {4, 1, 1}).item<double>();
  EXPECT_NEAR(thick, iso / 16, 1e-12);
  EXPECT_EQ(reg::parse_regularizer("tv"), reg::Regularizer::TotalVariation);
  EXPECT_EQ(reg::regularizer_name(reg::parse_regularizer("diffusion")), "diffusion");
  EXPECT_THROW(reg::parse_regularizer("elastic"), std::invalid_argument);
}

}  // namespace
}  // namespace autoreg::test
