// The field of view (registration/field_of_view.h): the constant padding around a scan's
// measurements is found where it is padding (a CBCT's cylinder at −1000, a CT's
// reconstruction circle at −3024) and left alone where the constant is anatomy's edge
// (clamped air in a CT) or an MR image's background, unless a value is given.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "autoreg/registration/field_of_view.h"

namespace autoreg::test {
namespace {

// 1 inside a cylinder along D of radius r voxels about the H×W centre, 1×1×D×H×W.
at::Tensor cylinder(int64_t d, int64_t h, int64_t w, double r) {
  const at::Tensor y = at::arange(h, at::kFloat).view({1, 1, 1, h, 1}) - (h - 1) / 2.0;
  const at::Tensor x = at::arange(w, at::kFloat).view({1, 1, 1, 1, w}) - (w - 1) / 2.0;
  return (y * y + x * x).le(r * r).to(at::kFloat).expand({1, 1, d, h, w}).contiguous();
}

// A body in air: soft tissue about +40 HU in an ellipse, air around it clamped at −1000
// (a quarter exactly −1000, the rest −999 … −950: a planning CT's air).
at::Tensor clamped_ct(int64_t d, int64_t h, int64_t w) {
  at::manual_seed(3);
  at::Tensor air = (-1000 + at::rand({1, 1, d, h, w}) * 60 - 10).clamp_min(-1000).round();
  const at::Tensor body = cylinder(d, h, w, 0.35 * double(h));
  const at::Tensor tissue = (40 + at::randn({1, 1, d, h, w}) * 20).round();
  return air * (1 - body) + tissue * body;
}

TEST(FieldOfView, ACbctCylinderIsFoundAndItsAirKept) {
  const int64_t D = 12, H = 48, W = 48;
  const at::Tensor fov = cylinder(D, H, W, 20);
  // Inside: a CBCT's values, not in HU (soft tissue about −180, air pockets near −990,
  // a few voxels exactly −1000 inside that are not connected to the faces).
  at::manual_seed(1);
  at::Tensor inside = (-180 + at::randn({1, 1, D, H, W}) * 60).round();
  inside.narrow(2, 3, 4).narrow(3, 20, 4).narrow(4, 20, 4).fill_(-1000);  // gas reading the padding value, enclosed
  const at::Tensor cbct = inside * fov + -1000 * (1 - fov);
  const registration::FieldOfView found = registration::field_of_view(cbct);
  ASSERT_TRUE(found.padding.has_value());
  EXPECT_EQ(*found.padding, -1000);
  ASSERT_TRUE(found.inside.defined());
  EXPECT_TRUE(found.inside.equal(fov)) << "the inside is the cylinder, enclosed −1000 voxels included";
  EXPECT_NEAR(found.outside_fraction, 1 - fov.to(at::kDouble).mean().item<double>(), 1e-12);
}

TEST(FieldOfView, AReconstructionCircleAtMinus3024IsFoundAroundClampedAir) {
  const int64_t D = 8, H = 48, W = 48;
  const at::Tensor circle = cylinder(D, H, W, 22);
  const at::Tensor ct = clamped_ct(D, H, W) * circle + -3024 * (1 - circle);
  const registration::FieldOfView found = registration::field_of_view(ct);
  ASSERT_TRUE(found.padding.has_value());
  EXPECT_EQ(*found.padding, -3024);
  EXPECT_TRUE(found.inside.equal(circle)) << "the clamped air inside the circle is inside";
}

TEST(FieldOfView, ClampedAirAndMrBackgroundAreNotPaddingUnlessAValueIsGiven) {
  const at::Tensor ct = clamped_ct(8, 40, 40);
  ASSERT_GT(ct.eq(-1000).to(at::kFloat).mean().item<double>(), 0.05);  // the test's premise: much exact −1000
  const registration::FieldOfView ct_found = registration::field_of_view(ct);
  EXPECT_FALSE(ct_found.padding.has_value()) << "clamped air has neighbours just above it: anatomy's edge";
  EXPECT_FALSE(ct_found.inside.defined());

  // A skull-stripped MR image: zeros around a head, and a zero voxel inside it.
  at::Tensor mr = cylinder(8, 40, 40, 14) * (100 + at::rand({1, 1, 8, 40, 40}) * 50);
  mr[0][0][4][20][20] = 0;
  EXPECT_FALSE(registration::field_of_view(mr).padding.has_value()) << "automatic: only Hounsfield-like padding";
  const registration::FieldOfView given = registration::field_of_view(mr, 0.0);
  ASSERT_TRUE(given.inside.defined());
  EXPECT_EQ(*given.padding, 0);
  EXPECT_EQ(given.inside[0][0][4][20][20].item<float>(), 1) << "an enclosed zero is inside";
  EXPECT_EQ(given.inside[0][0][4][0][0].item<float>(), 0);
  // Nothing outside (no voxel of the value on the faces): no field of view to report.
  EXPECT_FALSE(registration::field_of_view(mr + 1, 0.0).inside.defined());
}

TEST(FieldOfView, AwayFromTheEdgeKeepsWhatLiesTheMarginOrMoreInside) {
  // A cylinder of radius 20 voxels of 2 mm, slices of 3 mm: 15 mm inside its edge is a
  // radius of 12.5 voxels or less; the margin is grown as a box on a ~3 mm grid (at least
  // the margin, at most a cell more along an axis and √2 times that diagonally: a radius
  // of 5 voxels or more is kept), and the slab's faces are no edge of it.
  const int64_t D = 10, H = 56, W = 56;
  const at::Tensor inside = cylinder(D, H, W, 20);
  const at::Tensor away = registration::away_from_edge(inside, {3, 2, 2}, 15);
  ASSERT_EQ(away.sizes(), inside.sizes());
  const at::Tensor y = at::arange(H, at::kFloat).view({1, 1, 1, H, 1}) - (H - 1) / 2.0;
  const at::Tensor x = at::arange(W, at::kFloat).view({1, 1, 1, 1, W}) - (W - 1) / 2.0;
  const at::Tensor r = (y * y + x * x).sqrt().expand({1, 1, D, H, W});
  // Nothing within 15 mm (7.5 voxels) of the edge, and all of a radius of 5 voxels.
  EXPECT_EQ(away.masked_select(r.gt(20 - 7.5)).sum().item<double>(), 0);
  EXPECT_GT(away.masked_select(r.lt(5)).min().item<double>(), 0.5);
  // Every slice alike: the grid's faces along D are not the field of view's edge.
  EXPECT_TRUE(away.select(2, 0).equal(away.select(2, D / 2)));
  // A field of view with no edge stays whole.
  EXPECT_TRUE(registration::away_from_edge(at::ones({1, 1, D, H, W}), {3, 2, 2}, 15).equal(at::ones({1, 1, D, H, W})));
}

TEST(FieldOfView, GasInsideTheBodyIsFoundAndTheAirAroundItIsNot) {
  // A CT body in clamped air with a gas pocket (6³ voxels at −1000) inside it: the pocket,
  // grown by 2 mm (one voxel of 2 mm along each axis), is gas; the air around the body is
  // not, though it is as dark.
  const int64_t D = 16, H = 48, W = 48;
  const at::Tensor ct = clamped_ct(D, H, W);
  at::Tensor with_gas = ct.clone();
  with_gas.narrow(2, 5, 6).narrow(3, 21, 6).narrow(4, 21, 6).fill_(-1000);
  const at::Tensor gas = registration::enclosed_gas(with_gas, -480, {2, 2, 2}, 2);
  ASSERT_EQ(gas.sizes(), ct.sizes());
  EXPECT_EQ(gas.sum().item<double>(), 8 * 8 * 8);
  EXPECT_EQ(gas.narrow(2, 4, 8).narrow(3, 20, 8).narrow(4, 20, 8).min().item<double>(), 1);
  // No pocket, no gas: the body's own air is the outside's.
  EXPECT_EQ(registration::enclosed_gas(ct, -480, {2, 2, 2}, 2).sum().item<double>(), 0);
}

}  // namespace
}  // namespace autoreg::test
