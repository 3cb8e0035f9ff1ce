// Resampling onto another grid and intensity normalisation.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cmath>
#include <cstdint>

#include "autoreg/io/grid.h"
#include "autoreg/io/mapped.h"

namespace autoreg::test {
namespace {

using io::Geometry;
using io::Resampling;
using io::Volume;

// Physical point of voxel (i, j, k): origin + Direction · diag(spacing) · (i, j, k).
std::array<double, 3> physical(const Geometry& g, double i, double j, double k) {
  const double idx[3] = {i * g.spacing[0], j * g.spacing[1], k * g.spacing[2]};
  std::array<double, 3> p = g.origin;
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) p[r] += g.direction[r * 3 + c] * idx[c];
  return p;
}

double linear_function(const std::array<double, 3>& p) { return 2 * p[0] - p[1] + 0.5 * p[2] + 3; }

TEST(Resample, LinearFunctionOntoAnObliqueGridIsExact) {
  // A field linear in physical space, sampled on an axis-aligned 1 mm grid...
  Geometry in;
  in.size = {20, 20, 20};
  Volume v{at::empty({1, 1, 20, 20, 20}), in};
  auto a = v.data.accessor<float, 5>();
  for (int k = 0; k < 20; ++k)
    for (int j = 0; j < 20; ++j)
      for (int i = 0; i < 20; ++i) a[0][0][k][j][i] = linear_function(physical(in, i, j, k));
  // ...resampled onto a rotated, anisotropic grid inside it: trilinear interpolation of
  // a linear function is exact, so every inside voxel has the function's value.
  Geometry ref;
  ref.size = {8, 7, 6};
  ref.spacing = {1.5, 1.2, 0.9};
  const double t = 0.3;
  ref.direction = {std::cos(t), -std::sin(t), 0, std::sin(t), std::cos(t), 0, 0, 0, 1};
  ref.origin = {6.0, 4.0, 5.0};
  const Volume out = io::resample(v, ref, Resampling::Linear);
  EXPECT_TRUE(io::same_grid(out.geometry, ref));
  auto o = out.data.accessor<float, 5>();
  int checked = 0;
  for (int k = 0; k < 6; ++k)
    for (int j = 0; j < 7; ++j)
      for (int i = 0; i < 8; ++i) {
        const auto p = physical(ref, i, j, k);
        if (p[0] < 0 || p[0] > 19 || p[1] < 0 || p[1] > 19 || p[2] < 0 || p[2] > 19) continue;
        EXPECT_NEAR(o[0][0][k][j][i], linear_function(p), 1e-3) << i << "," << j << "," << k;
        ++checked;
      }
  EXPECT_GT(checked, 8 * 7 * 6 / 2);
}

TEST(Resample, LabelsStayLabelsAndSameGridIsIdentity) {
  at::manual_seed(5);
  Geometry g;
  g.size = {10, 9, 8};
  g.spacing = {1.0, 1.0, 2.0};
  const Volume labels{at::randint(0, 4, {1, 1, 8, 9, 10}, at::kInt) * 17, g};
  EXPECT_TRUE(at::equal(io::resample(labels, g, Resampling::Nearest).data, labels.data));
  Geometry fine = g;
  fine.size = {20, 18, 32};
  fine.spacing = {0.5, 0.5, 0.5};
  const at::Tensor up = io::resample(labels, fine, Resampling::Nearest).data;
  const at::Tensor values = std::get<0>(at::_unique(up));
  for (int64_t i = 0; i < values.numel(); ++i) EXPECT_EQ(values[i].item<int>() % 17, 0);
  EXPECT_FALSE(io::same_grid(g, fine));
}

TEST(Normalize, PercentilesMapToZeroAndOne) {
  const at::Tensor ramp = at::arange(1001, at::kFloat).view({1, 1, 1, 1, 1001});
  const at::Tensor n = io::normalize_intensity(ramp, 10, 90);
  EXPECT_FLOAT_EQ(n.min().item<float>(), 0.0f);
  EXPECT_FLOAT_EQ(n.max().item<float>(), 1.0f);
  EXPECT_NEAR(n[0][0][0][0][500].item<float>(), 0.5f, 1e-3);
  EXPECT_FLOAT_EQ(n[0][0][0][0][100].item<float>(), 0.0f);
  EXPECT_FLOAT_EQ(n[0][0][0][0][900].item<float>(), 1.0f);
  EXPECT_EQ(io::normalize_intensity(at::full({1, 1, 2, 2, 2}, 5.0)).abs().max().item<float>(), 0.0f);
}

TEST(Orientation, CodeSetsDirectionsAndKeepsTheCentre) {
  Geometry g;
  g.size = {10, 20, 30};
  g.spacing = {1, 2, 3};
  g.origin = {5, -7, 11};
  const auto centre = [](const Geometry& x) { return physical(x, 4.5, 9.5, 14.5); };
  const Geometry lia = io::with_orientation(g, "LIA");
  // LPS frame: i towards Left = +x, j towards Inferior = −z, k towards Anterior = −y.
  const std::array<double, 9> want = {1, 0, 0, 0, 0, -1, 0, -1, 0};
  for (int i = 0; i < 9; ++i) EXPECT_EQ(lia.direction[i], want[i]) << i;
  for (int r = 0; r < 3; ++r) EXPECT_NEAR(centre(lia)[r], centre(g)[r], 1e-9);
  EXPECT_EQ(lia.spacing, g.spacing);
  // RAS in LPS terms: x and y flipped.
  const Geometry ras = io::with_orientation(g, "ras");
  EXPECT_EQ(ras.direction[0], -1);
  EXPECT_EQ(ras.direction[4], -1);
  EXPECT_EQ(ras.direction[8], 1);
  for (const char* bad : {"LI", "LIX", "LLA", "RAIS"}) {
    EXPECT_THROW(io::with_orientation(g, bad), std::invalid_argument) << bad;
  }
}

// orientation_code names a grid's axes as with_orientation reads them; an oblique grid
// gets the nearest code.
TEST(Grid, OrientationCodeInvertsWithOrientation) {
  Geometry g;
  g.size = {10, 20, 30};
  for (const char* code : {"LPS", "RAS", "LIA", "ASL", "SLP", "IRP"}) {
    EXPECT_EQ(io::orientation_code(io::with_orientation(g, code)), code);
  }
  // LPS rotated 20° about z: still LPS; 70°: i points mostly along P, j along R.
  const double pi = std::acos(-1.0);
  for (const auto& [degrees, want] : {std::pair<double, const char*>{20, "LPS"}, {70, "PRS"}}) {
    const double c = std::cos(degrees * pi / 180), s = std::sin(degrees * pi / 180);
    g.direction = {c, -s, 0, s, c, 0, 0, 0, 1};
    EXPECT_EQ(io::orientation_code(g), want) << degrees;
  }
}

// The separable sampler gives sample_at's values on a grid whose axes are the volume's,
// permuted and flipped, at another spacing, partly outside the volume; an oblique grid is
// left to sample_at.
// A random 3-channel field on a 9×7×6 grid of anisotropic voxels.
Volume random_field(uint64_t seed) {
  at::manual_seed(seed);
  Geometry g;
  g.size = {9, 7, 6};
  g.spacing = {2, 2.5, 3};
  g.origin = {-8, 4, 20};
  return {at::randn({1, 3, 6, 7, 9}), g};
}

// A grid whose axes are g's permuted (i along S, j along L, k along A), at other
// spacings, shifted by `shift` mm along x so that some of its voxels fall outside g.
Geometry parallel_target(const Geometry& g, double shift) {
  Geometry t = io::with_orientation(g, "SLA");
  t.size = {23, 15, 19};
  t.spacing = {0.9, 1.3, 1.1};
  t.origin[0] -= shift;
  t.origin[2] += 1.75;  // (not onto a voxel's outer face, where float32 and float64 disagree)
  return t;
}

TEST(Grid, SampleOnParallelGridEqualsSampleAt) {
  const Volume field = random_field(4);
  Geometry t = parallel_target(field.geometry, 2.3);
  const auto fast = io::sample_on_parallel_grid(field, t);
  ASSERT_TRUE(fast.has_value());
  const at::Tensor want = io::sample_at(field, io::physical_points(t));
  ASSERT_EQ(fast->sizes(), want.sizes());
  EXPECT_TRUE(at::allclose(*fast, want, 1e-4, 1e-5)) << (*fast - want).abs().max().item<double>();
  EXPECT_GT((want == 0).all(1).sum().item<int64_t>(), 0) << "the test grid reaches outside";
  EXPECT_GT((want != 0).all(1).sum().item<int64_t>(), 100);
  const double c = std::cos(0.3), s = std::sin(0.3);
  t.direction = {c, -s, 0, s, c, 0, 0, 0, 1};
  EXPECT_FALSE(io::sample_on_parallel_grid(field, t).has_value());
}

// With Outside::Border a point outside reads the value at the nearest point of the
// volume, in both samplers: sample_at at the points clamped into the volume.
TEST(Grid, OutsideBorderContinuesTheFaceValues) {
  const Volume field = random_field(5);
  const Geometry& g = field.geometry;
  const Geometry t = parallel_target(g, 4.3);
  // The reference: each target point moved to the nearest point of the volume's box of
  // voxel centres, then sampled.
  const at::Tensor points = io::physical_points(t).to(at::kDouble);  // 1×3×D×H×W, x y z
  const at::Tensor to_world = io::index_to_world(g);
  const at::Tensor flat = points.reshape({3, -1});
  const at::Tensor index = at::inverse(to_world).slice(0, 0, 3).slice(1, 0, 3).matmul(flat) +
                           at::inverse(to_world).slice(0, 0, 3).slice(1, 3, 4);
  const at::Tensor upper = at::tensor({8.0, 6.0, 5.0}, at::kDouble).view({3, 1});
  const at::Tensor clamped = at::maximum(at::minimum(index, upper), at::zeros_like(upper));
  const at::Tensor back = to_world.slice(0, 0, 3).slice(1, 0, 3).matmul(clamped) + to_world.slice(0, 0, 3).slice(1, 3, 4);
  const at::Tensor want = io::sample_at(field, back.reshape(points.sizes()).to(at::kFloat));
  EXPECT_GT((index < -0.5).any(0).sum().item<int64_t>(), 100) << "the test grid reaches outside";
  const auto fast = io::sample_on_parallel_grid(field, t, io::Outside::Border);
  ASSERT_TRUE(fast.has_value());
  EXPECT_TRUE(at::allclose(*fast, want, 1e-4, 1e-4)) << (*fast - want).abs().max().item<double>();
  const at::Tensor mapped = io::sample_mapped(field, t, at::Tensor(), at::Tensor(), io::Outside::Border);
  EXPECT_TRUE(at::allclose(mapped, want, 1e-4, 1e-4)) << (mapped - want).abs().max().item<double>();
  EXPECT_EQ((want == 0).all(1).sum().item<int64_t>(), 0);
}

}  // namespace
}  // namespace autoreg::test
