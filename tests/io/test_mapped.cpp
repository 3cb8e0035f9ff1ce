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

TEST(Mapped, RefusesAFieldOfTheWrongGrid) {
  const Case c;
  const io::Volume v{at::rand({1, 1, 9, 11, 13}), c.source};
  EXPECT_THROW(io::sample_mapped(v, c.target, at::Tensor(), at::zeros({1, 3, 4, 4, 4})), c10::Error);
  EXPECT_THROW(io::compose_affine(c.target, at::eye(3, at::kDouble), c.u), c10::Error);
}

}  // namespace
}  // namespace autoreg::test
