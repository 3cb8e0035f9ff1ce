// Affine pre-alignment recovers known affines between volumes on different, oblique,
// anisotropic grids.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cmath>

#include "autoreg/registration/affine.h"

namespace autoreg::test {
namespace {

namespace reg = autoreg::registration;

// Index-to-world matrix of a grid: rotation about z by `degrees`, spacing, origin.
at::Tensor grid_matrix(double degrees, std::array<double, 3> spacing, std::array<double, 3> origin) {
  const double c = std::cos(degrees * M_PI / 180), s = std::sin(degrees * M_PI / 180);
  at::Tensor m = at::eye(4, at::kDouble);
  const double r[3][3] = {{c, -s, 0}, {s, c, 0}, {0, 0, 1}};
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) m[i][j] = r[i][j] * spacing[j];
    m[i][3] = origin[i];
  }
  return m;
}

// A 4×4 affine: rotations about x and z (degrees), isotropic scale, translation.
at::Tensor affine(double rx, double rz, double scale, std::array<double, 3> t) {
  const double cx = std::cos(rx * M_PI / 180), sx = std::sin(rx * M_PI / 180);
  const double cz = std::cos(rz * M_PI / 180), sz = std::sin(rz * M_PI / 180);
  const at::Tensor x = at::tensor({1.0, 0.0, 0.0, 0.0, cx, -sx, 0.0, sx, cx}, at::kDouble).view({3, 3});
  const at::Tensor z = at::tensor({cz, -sz, 0.0, sz, cz, 0.0, 0.0, 0.0, 1.0}, at::kDouble).view({3, 3});
  at::Tensor a = at::eye(4, at::kDouble);
  a.slice(0, 0, 3).slice(1, 0, 3).copy_(z.matmul(x) * scale);
  for (int i = 0; i < 3; ++i) a[i][3] = t[i];
  return a;
}

// World points (N×3) of the voxels of a D×H×W grid, in memory order.
at::Tensor world(const at::Tensor& index_to_world, int64_t d, int64_t h, int64_t w) {
  const auto o = at::TensorOptions().dtype(at::kDouble);
  const auto g = at::meshgrid({at::arange(d, o), at::arange(h, o), at::arange(w, o)}, "ij");
  const at::Tensor ijk = at::stack({g[2].flatten(), g[1].flatten(), g[0].flatten()}, 1);
  return ijk.matmul(index_to_world.slice(0, 0, 3).slice(1, 0, 3).t()) + index_to_world.slice(0, 0, 3).select(1, 3);
}

// An asymmetric "head": a soft ellipsoid with three inner blobs, in world millimetres.
at::Tensor head(const at::Tensor& p) {
  auto blob = [&](std::array<double, 3> c, std::array<double, 3> r, double power) {
    at::Tensor q = at::zeros({p.size(0)}, at::kDouble);
    for (int i = 0; i < 3; ++i) q = q + ((p.select(1, i) - c[i]) / r[i]).pow(2);
    return at::exp(-q.pow(power));
  };
  return 0.5 * blob({0, 0, 0}, {36, 28, 32}, 3) + 0.4 * blob({12, 6, 0}, {9, 7, 8}, 1) +
         0.3 * blob({-14, -9, 10}, {6, 6, 6}, 1) + 0.5 * blob({4, 14, -12}, {11, 8, 6}, 1);
}

struct Pair {
  at::Tensor fixed, fixed_grid, moving, moving_grid;
};

// fixed(x) = head(x) on an axis-aligned 2 mm grid; moving(y) = head(A⁻¹·y) on an oblique,
// anisotropic grid, so that moving(A·x) = fixed(x).
Pair make_pair(const at::Tensor& a) {
  Pair p;
  p.fixed_grid = grid_matrix(0, {2, 2, 2}, {-48, -48, -48});
  p.fixed = head(world(p.fixed_grid, 48, 48, 48)).view({1, 1, 48, 48, 48}).to(at::kFloat);
  p.moving_grid = grid_matrix(25, {2.4, 2.2, 2.0}, {-40, -70, -50});
  const at::Tensor y = world(p.moving_grid, 50, 52, 46);
  const at::Tensor inv = at::inverse(a);
  const at::Tensor x = y.matmul(inv.slice(0, 0, 3).slice(1, 0, 3).t()) + inv.slice(0, 0, 3).select(1, 3);
  p.moving = head(x).view({1, 1, 50, 52, 46}).to(at::kFloat);
  return p;
}

// Mean and max distance between A·x and B·x over the fixed head's points (|x| < 35 mm).
std::pair<double, double> mapping_error(const at::Tensor& a, const at::Tensor& b, const Pair& p) {
  const at::Tensor x = world(p.fixed_grid, 48, 48, 48);
  const at::Tensor inside = x.norm(2, 1) < 35;
  const at::Tensor xi = x.index({inside});
  const at::Tensor d = (a - b).slice(0, 0, 3);
  const at::Tensor err = (xi.matmul(d.slice(1, 0, 3).t()) + d.select(1, 3)).norm(2, 1);
  return {err.mean().item<double>(), err.max().item<double>()};
}

TEST(Affine, MomentsRecoverATranslation) {
  const at::Tensor truth = affine(0, 0, 1, {7, -5, 4});
  const Pair p = make_pair(truth);
  const at::Tensor a = reg::moments_affine(p.fixed, p.fixed_grid, p.moving, p.moving_grid);
  const auto [mean, max] = mapping_error(a, truth, p);
  EXPECT_LT(max, 1.0) << "mean " << mean;
}

TEST(Affine, RecoversRotationScaleAndTranslationAcrossObliqueGrids) {
  const at::Tensor truth = affine(12, -8, 1.06, {6, -4, 3});
  const Pair p = make_pair(truth);
  reg::AffineOptions o;
  o.iterations = {80, 40};
  const at::Tensor a = reg::fit_affine(p.fixed, p.fixed_grid, p.moving, p.moving_grid, o);
  const auto [mean, max] = mapping_error(a, truth, p);
  EXPECT_LT(mean, 0.5);  // a quarter of a fixed voxel
  EXPECT_LT(max, 1.0);
  // The moments start alone is far off: the optimisation does the work.
  const auto [mean0, max0] = mapping_error(reg::moments_affine(p.fixed, p.fixed_grid, p.moving, p.moving_grid), truth, p);
  EXPECT_GT(mean0, 3.0);
}

TEST(Affine, PrincipalAxesCatchALargeRotation) {
  // 100° about z: gradient descent from the headers' orientation cannot get there.
  const at::Tensor truth = affine(0, 100, 1.0, {3, 2, -4});
  const Pair p = make_pair(truth);
  reg::AffineOptions o;
  o.iterations = {80, 40};
  const at::Tensor a = reg::fit_affine(p.fixed, p.fixed_grid, p.moving, p.moving_grid, o);
  EXPECT_LT(mapping_error(a, truth, p).first, 1.0);
  o.principal_axes = false;
  const at::Tensor b = reg::fit_affine(p.fixed, p.fixed_grid, p.moving, p.moving_grid, o);
  EXPECT_GT(mapping_error(b, truth, p).first, 5.0);
}

TEST(Affine, MutualInformationAlignsAnInvertedContrast) {
  // "mind" (different modalities): the affine stage uses mutual information, which a
  // contrast inversion does not change.
  const at::Tensor truth = affine(8, -6, 1.0, {5, -3, 2});
  Pair p = make_pair(truth);
  p.moving = 1 - p.moving / p.moving.max();
  reg::AffineOptions o;
  o.similarity = reg::Similarity::Mind;
  o.iterations = {80, 40};
  const at::Tensor a = reg::fit_affine(p.fixed, p.fixed_grid, p.moving, p.moving_grid, o);
  // Within a fixed voxel (2 mm): a 32-bin histogram of 20 000 points is a noisier
  // criterion than correlation (which gets a quarter voxel above).
  EXPECT_LT(mapping_error(a, truth, p).first, 2.0);
  // From the moments start, which is far off.
  EXPECT_GT(mapping_error(reg::moments_affine(p.fixed, p.fixed_grid, 1 - p.moving, p.moving_grid), truth, p).first, 3.0);
}

TEST(Affine, RigidKeepsARotationAndRecoversARigidMotion) {
  const at::Tensor truth = affine(12, -8, 1.0, {6, -4, 3});
  const Pair p = make_pair(truth);
  reg::AffineOptions o;
  o.iterations = {80, 40};
  o.rigid = true;
  const at::Tensor a = reg::fit_affine(p.fixed, p.fixed_grid, p.moving, p.moving_grid, o);
  const at::Tensor r = a.slice(0, 0, 3).slice(1, 0, 3);
  EXPECT_LT((r.t().matmul(r) - at::eye(3, at::kDouble)).abs().max().item<double>(), 1e-9);
  EXPECT_NEAR(at::det(r).item<double>(), 1.0, 1e-9);
  EXPECT_LT(mapping_error(a, truth, p).first, 0.5);
  // A scaled pair stays a rotation (the 12-parameter fit follows the scale).
  const Pair scaled = make_pair(affine(12, -8, 1.08, {6, -4, 3}));
  const at::Tensor b = reg::fit_affine(scaled.fixed, scaled.fixed_grid, scaled.moving, scaled.moving_grid, o);
  EXPECT_NEAR(at::det(b.slice(0, 0, 3).slice(1, 0, 3)).item<double>(), 1.0, 1e-9);
  // The same through the autograd path (which a moving mask takes), and it stays a rotation.
  o.moving_mask = at::ones_like(p.moving);
  const at::Tensor c = reg::fit_affine(p.fixed, p.fixed_grid, p.moving, p.moving_grid, o);
  const at::Tensor rc = c.slice(0, 0, 3).slice(1, 0, 3);
  EXPECT_LT((rc.t().matmul(rc) - at::eye(3, at::kDouble)).abs().max().item<double>(), 1e-5);
  EXPECT_LT(mapping_error(c, truth, p).first, 0.5);
}

// Cost-function masks: what lies outside them does not change the result; inside it does.
TEST(Affine, ImageOutsideTheMasksDoesNotChangeTheResult) {
  const at::Tensor truth = affine(10, -6, 1.04, {5, -3, 2});
  const Pair p = make_pair(truth);
  reg::AffineOptions o;
  o.iterations = {40, 20};
  o.candidate_iterations = 10;
  // The fixed mask: the first half along W (index 24 on: outside; a multiple of the 4 mm
  // level's 2-voxel blocks, so no block straddles its edge).
  o.fixed_mask = at::zeros_like(p.fixed);
  o.fixed_mask.narrow(4, 0, 24).fill_(1);
  const at::Tensor a = reg::fit_affine(p.fixed, p.fixed_grid, p.moving, p.moving_grid, o);
  EXPECT_LT(mapping_error(a, truth, p).first, 2.0);  // within a voxel from half the head and few steps
  at::manual_seed(4);
  const at::Tensor noise = at::rand_like(p.fixed);
  const at::Tensor outside = p.fixed + noise * (1 - o.fixed_mask);
  EXPECT_TRUE(at::equal(reg::fit_affine(outside, p.fixed_grid, p.moving, p.moving_grid, o), a));
  const at::Tensor inside = p.fixed + noise * o.fixed_mask;
  EXPECT_FALSE(at::equal(reg::fit_affine(inside, p.fixed_grid, p.moving, p.moving_grid, o), a));
  // The moving mask: its voxels from index 30 along W on are outside; changing the
  // moving image beyond 4 voxels past that edge (beyond the pyramid's blocks and
  // trilinear reads) changes nothing.
  reg::AffineOptions om = o;
  om.fixed_mask = at::Tensor();
  om.moving_mask = at::zeros_like(p.moving);
  om.moving_mask.narrow(4, 0, 30).fill_(1);
  const at::Tensor b = reg::fit_affine(p.fixed, p.fixed_grid, p.moving, p.moving_grid, om);
  at::Tensor far = p.moving.clone();
  far.narrow(4, 34, p.moving.size(4) - 34).add_(at::rand_like(far.narrow(4, 34, p.moving.size(4) - 34)));
  EXPECT_TRUE(at::equal(reg::fit_affine(p.fixed, p.fixed_grid, far, p.moving_grid, om), b));
  at::Tensor near = p.moving.clone();
  near.narrow(4, 10, 10).add_(at::rand_like(near.narrow(4, 10, 10)));
  EXPECT_FALSE(at::equal(reg::fit_affine(p.fixed, p.fixed_grid, near, p.moving_grid, om), b));
  // A mask of another shape, or an empty one, is refused.
  om.moving_mask = at::ones({1, 1, 4, 4, 4});
  EXPECT_THROW(reg::fit_affine(p.fixed, p.fixed_grid, p.moving, p.moving_grid, om), c10::Error);
  o.fixed_mask = at::zeros_like(p.fixed);
  EXPECT_THROW(reg::fit_affine(p.fixed, p.fixed_grid, p.moving, p.moving_grid, o), c10::Error);
}

TEST(Affine, RejectsBadShapes) {
  const at::Tensor g = at::eye(4, at::kDouble);
  EXPECT_THROW(reg::fit_affine(at::zeros({8, 8, 8}), g, at::zeros({1, 1, 8, 8, 8}), g), c10::Error);
  EXPECT_THROW(reg::fit_affine(at::ones({1, 1, 8, 8, 8}), at::eye(3), at::ones({1, 1, 8, 8, 8}), g), c10::Error);
  // An empty (all-zero) image has no centre of mass.
  EXPECT_THROW(reg::moments_affine(at::zeros({1, 1, 8, 8, 8}), g, at::ones({1, 1, 8, 8, 8}), g), c10::Error);
}

}  // namespace
}  // namespace autoreg::test
