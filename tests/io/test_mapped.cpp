// io::sample_mapped and io::compose_affine compute in one pass what sample_at and the
// point arithmetic compute through volume-sized coordinate tensors: the same values for
// intensities (several channels), label maps and composed fields, on oblique grids of
// other sizes and spacings, with points that leave the volume.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cmath>

#include "autoreg/io/field.h"
#include "autoreg/io/grid.h"
#include "autoreg/io/mapped.h"
#include "autoreg/io/transform.h"
#include "autoreg/ops.h"

namespace autoreg::test {
namespace {

using io::Geometry;

Geometry tilted(std::array<int64_t, 3> size, std::array<double, 3> spacing, std::array<double, 3> origin, double angle) {
  Geometry g;
  g.size = size;
  g.spacing = spacing;
  g.origin = origin;
  const double c = std::cos(angle), s = std::sin(angle);
  const double ax[3] = {1.0 / 3, 2.0 / 3, 2.0 / 3};
  const double cross[3][3] = {{0, -ax[2], ax[1]}, {ax[2], 0, -ax[0]}, {-ax[1], ax[0], 0}};
  for (int r = 0; r < 3; ++r)
    for (int k = 0; k < 3; ++k) g.direction[r * 3 + k] = (r == k ? c : 0) + (1 - c) * ax[r] * ax[k] + s * cross[r][k];
  return g;
}

at::Tensor an_affine() {
  return at::tensor({0.97, 0.06, -0.03, 1.5, -0.04, 1.03, 0.05, -2.25, 0.02, -0.05, 0.96, 0.75, 0.0, 0.0, 0.0, 1.0},
                    at::kDouble)
      .view({4, 4});
}

struct Case {
  Geometry source = tilted({13, 11, 9}, {1.1, 0.9, 1.6}, {-6.0, -4.0, -5.0}, 0.3);
  Geometry target = tilted({12, 10, 14}, {1.0, 1.2, 0.8}, {-5.0, -6.5, -4.0}, -0.2);
  at::Tensor u = at::randn({1, 3, 14, 10, 12}) * 1.5;  // voxels of the target
  at::Tensor points() const {
    return io::transform_points(an_affine(), io::physical_points(target) + io::voxel_to_physical(u, target));
  }
};

TEST(Mapped, SamplesIntensitiesAsSampleAtDoes) {
  at::manual_seed(3);
  const Case c;
  const io::Volume v{at::rand({1, 2, 9, 11, 13}), c.source};  // two channels
  const at::Tensor want = io::sample_at(v, c.points());
  const at::Tensor got = io::sample_mapped(v, c.target, an_affine(), c.u);
  ASSERT_EQ(got.sizes(), want.sizes());
  EXPECT_TRUE(at::allclose(got, want, 1e-4, 1e-4)) << (got - want).abs().max().item<float>();
  // Some points fall outside (0 there) and some inside.
  EXPECT_GT((want == 0).sum().item<int64_t>(), 0);
  EXPECT_GT((want != 0).sum().item<int64_t>(), want.numel() / 4);
}

TEST(Mapped, SamplesLabelsByNearestNeighbourAsSampleAtDoes) {
  at::manual_seed(4);
  const Case c;
  const io::Volume labels{at::randint(0, 50, {1, 1, 9, 11, 13}, at::kInt), c.source};
  const at::Tensor want = io::sample_at(labels, c.points());
  const at::Tensor got = io::sample_mapped(labels, c.target, an_affine(), c.u);
  ASSERT_EQ(got.scalar_type(), at::kInt);
  // Float against double coordinates may round a point lying on a voxel boundary the
  // other way: at most a few in a thousand.
  EXPECT_LE((got != want).sum().item<int64_t>(), want.numel() / 300);
}

TEST(Mapped, WithoutAffineOrDisplacementSamplesTheTargetsPoints) {
  at::manual_seed(5);
  const Case c;
  const io::Volume v{at::rand({1, 1, 9, 11, 13}), c.source};
  EXPECT_TRUE(at::allclose(io::sample_mapped(v, c.target, at::Tensor(), at::Tensor()),
                           io::sample_at(v, io::physical_points(c.target)), 1e-4, 1e-4));
  EXPECT_TRUE(at::allclose(io::sample_mapped(v, c.target, an_affine(), at::Tensor()),
                           io::sample_at(v, io::transform_points(an_affine(), io::physical_points(c.target))), 1e-4,
                           1e-4));
}

TEST(Mapped, ComposesTheAffineAfterTheDisplacement) {
  at::manual_seed(6);
  const Case c;
  const at::Tensor x = io::physical_points(c.target);
  const at::Tensor want = io::physical_to_voxel(c.points() - x, c.target);
  const at::Tensor got = io::compose_affine(c.target, an_affine(), c.u);
  EXPECT_TRUE(at::allclose(got, want, 1e-4, 1e-4)) << (got - want).abs().max().item<float>();
  // In place: the same values, in the displacement's own storage.
  at::Tensor u = c.u.clone();
  const at::Tensor in_place = io::compose_affine_(c.target, an_affine(), u);
  EXPECT_EQ(in_place.data_ptr(), u.data_ptr());
  EXPECT_TRUE(at::equal(in_place, got));
  // The identity affine gives the displacement back.
  EXPECT_TRUE(at::allclose(io::compose_affine(c.target, at::eye(4, at::kDouble), c.u), c.u, 1e-5, 1e-5));
}

// Which voxels of `fixed` the map (`forward`, fixed voxels) sends at least a voxel
// inside `moving`: where the map back, a field on the moving grid, is known.
at::Tensor lands_inside(const Geometry& fixed, const at::Tensor& forward, const Geometry& moving) {
  const at::Tensor y = io::physical_points(fixed).to(at::kDouble) + io::voxel_to_physical(forward.to(at::kDouble), fixed);
  const at::Tensor index = io::transform_points(at::inverse(io::index_to_world(moving)), y);  // channels i, j, k
  at::Tensor inside = at::ones_like(index.select(1, 0), at::kBool);
  for (int a = 0; a < 3; ++a) {
    inside &= (index.select(1, a) >= 1) & (index.select(1, a) <= double(moving.size[a] - 2));
  }
  return inside.unsqueeze(1);
}

TEST(Mapped, TheInverseMapUndoesTheAffineAndATranslation) {
  // The map x ↦ A·x(p + c) for a constant c has the inverse y ↦ x(x⁻¹(A⁻¹y) − c): the
  // values are the point arithmetic's, and the round trip is exact wherever the map
  // lands inside the moving grid (outside it the map back continues by its border values).
  const Case c;
  const Geometry& fixed = c.target;
  const Geometry& moving = c.source;
  const at::Tensor shift = at::tensor({0.7f, -1.2f, 0.4f}).view({1, 3, 1, 1, 1});
  const at::Tensor forward = io::compose_affine(fixed, an_affine(), shift.expand({1, 3, 14, 10, 12}).contiguous());
  const at::Tensor inverse = io::inverse_map(moving, fixed, an_affine(), (-shift).expand({1, 3, 14, 10, 12}).contiguous());
  ASSERT_EQ(inverse.sizes(), (std::vector<int64_t>{1, 3, 9, 11, 13}));
  Geometry fixed_axes = fixed;  // fixed voxel vectors, one per moving voxel
  fixed_axes.size = moving.size;
  const at::Tensor y = io::physical_points(moving).to(at::kDouble);
  const at::Tensor back = io::voxel_to_physical((-shift).expand({1, 3, 9, 11, 13}).to(at::kDouble), fixed_axes);
  const at::Tensor z = io::transform_points(at::inverse(an_affine()), y) + back;
  const at::Tensor want = io::physical_to_voxel(z - y, moving).to(at::kFloat);
  EXPECT_TRUE(at::allclose(inverse, want, 1e-4, 1e-4)) << (inverse - want).abs().max().item<float>();
  const at::Tensor inside = lands_inside(fixed, forward, moving);
  ASSERT_GT(inside.sum().item<int64_t>(), 50);
  EXPECT_LT(io::round_trip_error_mm(fixed, forward, moving, inverse).masked_select(inside).max().item<float>(), 1e-3);
  // Without a deformable part: the affine's inverse alone.
  const at::Tensor affine_only = io::inverse_map(moving, fixed, an_affine(), at::Tensor());
  EXPECT_TRUE(at::allclose(affine_only, io::compose_affine(moving, at::inverse(an_affine()), at::Tensor()), 1e-5, 1e-5));
}

TEST(Mapped, TheInverseOfASmoothDeformationComesBackWithinATenthOfItsSize) {
  // exp(v) and exp(−v) on the fixed grid, behind an affine: the round trip's error is
  // what scaling and squaring and trilinear sampling leave, small against the field.
  at::manual_seed(8);
  const Geometry fixed = tilted({24, 20, 16}, {1.0, 1.2, 0.8}, {-12.0, -12.0, -6.0}, -0.2);
  const Geometry moving = tilted({40, 36, 32}, {1.0, 1.0, 1.0}, {-20.0, -18.0, -16.0}, 0.3);
  const at::Tensor v = at::upsample_trilinear3d((at::rand({1, 3, 3, 3, 3}) * 2 - 1) * 2.0, {16, 20, 24}, true);
  const at::Tensor forward = io::compose_affine(fixed, an_affine(), ops::integrate(v, 7));
  const at::Tensor inverse = io::inverse_map(moving, fixed, an_affine(), ops::integrate(-v, 7));
  // Inside the moving grid, and away from the fixed grid's faces (where scaling and
  // squaring's border padding makes exp(−v) no inverse of exp(v)).
  at::Tensor inside = lands_inside(fixed, forward, moving);
  at::Tensor away = at::zeros_like(inside);
  away.narrow(2, 3, 10).narrow(3, 3, 14).narrow(4, 3, 18).fill_(true);
  inside &= away;
  ASSERT_GT(inside.sum().item<int64_t>(), 1000);
  const at::Tensor error = io::round_trip_error_mm(fixed, forward, moving, inverse).masked_select(inside);
  const double size = io::voxel_to_physical(ops::integrate(v, 7), fixed).norm(2, 1).max().item<double>();
  ASSERT_GT(size, 1.0);
  EXPECT_LT(error.max().item<float>(), 0.1 * size) << size;
  // The forward deformation taken as its own inverse is far off.
  const at::Tensor wrong = io::inverse_map(moving, fixed, an_affine(), ops::integrate(v, 7));
  EXPECT_GT(io::round_trip_error_mm(fixed, forward, moving, wrong).masked_select(inside).max().item<float>(), 0.5 * size);
}

TEST(Mapped, RefusesAFieldOfTheWrongGrid) {
  const Case c;
  const io::Volume v{at::rand({1, 1, 9, 11, 13}), c.source};
  EXPECT_THROW(io::sample_mapped(v, c.target, at::Tensor(), at::zeros({1, 3, 4, 4, 4})), c10::Error);
  EXPECT_THROW(io::compose_affine(c.target, at::eye(3, at::kDouble), c.u), c10::Error);
}

}  // namespace
}  // namespace autoreg::test
