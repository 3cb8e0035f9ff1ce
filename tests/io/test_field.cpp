// Displacement fields on disk: the voxel ↔ physical convention, round trips, and the
// interoperability check of the I/O issue: a field written by autoreg and applied by
// ITK's own ResampleImageFilter through a DisplacementFieldTransform gives autoreg's
// warped image.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <itkDisplacementFieldTransform.h>
#include <itkImageFileReader.h>
#include <itkTransformFileReader.h>

#include <cmath>
#include <filesystem>

#include "autoreg/io/field.h"
#include "autoreg/io/grid.h"
#include "autoreg/ops.h"
#include "itk_resample.h"

namespace autoreg::test {
namespace {

namespace fs = std::filesystem;
using io::Geometry;

Geometry oblique(std::array<int64_t, 3> size) {
  Geometry g;
  g.size = size;
  g.spacing = {0.8, 1.4, 2.2};
  g.origin = {10.0, -20.5, 3.25};
  const double t = 0.5, c = std::cos(t), s = std::sin(t);
  // A rotation about the tilted axis (1, 2, 2)/3.
  const double ax[3] = {1.0 / 3, 2.0 / 3, 2.0 / 3};
  const double cross[3][3] = {{0, -ax[2], ax[1]}, {ax[2], 0, -ax[0]}, {-ax[1], ax[0], 0}};
  for (int r = 0; r < 3; ++r)
    for (int k = 0; k < 3; ++k)
      g.direction[r * 3 + k] = (r == k ? c : 0) + (1 - c) * ax[r] * ax[k] + s * cross[r][k];
  return g;
}

at::Tensor smooth(std::array<int64_t, 3> size, int64_t channels, double amplitude) {
  const at::Tensor coarse = (at::rand({1, channels, 4, 4, 4}, at::kDouble) * 2 - 1) * amplitude;
  return at::upsample_trilinear3d(coarse, {size[2], size[1], size[0]}, true).to(at::kFloat);
}

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("autoreg-field-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

TEST(Field, OneVoxelAlongIIsOneSpacingAlongDirectionColumnZero) {
  const Geometry g = oblique({4, 5, 6});
  at::Tensor u = at::zeros({1, 3, 6, 5, 4});
  u.select(1, 2).fill_(1.0);  // channel 2 moves along W, ITK's i
  const at::Tensor p = io::voxel_to_physical(u, g);
  for (int r = 0; r < 3; ++r) {
    EXPECT_NEAR(p[0][r][0][0][0].item<double>(), g.direction[r * 3 + 0] * g.spacing[0], 1e-6);
  }
  EXPECT_TRUE(at::allclose(io::physical_to_voxel(p, g), u, 1e-6, 1e-6));
}

TEST(Field, RoundTripThroughFiles) {
  at::manual_seed(3);
  const Geometry g = oblique({9, 8, 7});
  const at::Tensor u = smooth(g.size, 3, 3.0);
  for (const std::string ext : {".nii.gz", ".mha", ".h5"}) {
    const std::string file = temp_path("roundtrip" + ext);
    io::write_displacement_field(file, u, g);
    Geometry back_grid;
    const at::Tensor back = io::read_displacement_field(file, &back_grid);
    fs::remove(file);
    EXPECT_TRUE(at::allclose(back, u, 1e-4, 1e-4)) << ext;
    EXPECT_EQ(back_grid.size, g.size);
    for (int i = 0; i < 9; ++i) EXPECT_NEAR(back_grid.direction[i], g.direction[i], 1e-5);
  }
}

// The field file as ITK reads it: a vector image, or a transform file's transform.
itk::DisplacementFieldTransform<double, 3>::Pointer itk_transform(const std::string& file) {
  using Field = itk::Image<itk::Vector<double, 3>, 3>;
  if (fs::path(file).extension() != ".h5") {
    auto transform = itk::DisplacementFieldTransform<double, 3>::New();
    transform->SetDisplacementField(itk::ReadImage<Field>(file));
    return transform;
  }
  auto reader = itk::TransformFileReaderTemplate<double>::New();
  reader->SetFileName(file);
  reader->Update();
  auto* t = dynamic_cast<itk::DisplacementFieldTransform<double, 3>*>(
      reader->GetTransformList()->front().GetPointer());
  EXPECT_NE(t, nullptr) << file << " holds " << reader->GetTransformList()->front()->GetNameOfClass();
  return t;
}

class FieldInterop : public ::testing::TestWithParam<std::string> {};

TEST_P(FieldInterop, ItkResampleWithTheWrittenFieldMatchesWarp) {
  at::manual_seed(4);
  const Geometry g = oblique({20, 18, 16});
  const at::Tensor moving = smooth(g.size, 1, 100.0);
  const at::Tensor u = smooth(g.size, 3, 2.5);
  const at::Tensor ours = ops::warp(moving, u, ops::Interpolation::Linear, ops::Padding::Zeros);

  const std::string image_file = temp_path("moving.nii.gz"), field_file = temp_path("field" + GetParam());
  io::write_volume(image_file, {moving, g});
  io::write_displacement_field(field_file, u, g);

  const auto transform = itk_transform(field_file);
  ASSERT_TRUE(transform);
  const at::Tensor theirs = itk_resample(image_file, transform);
  fs::remove(image_file);
  fs::remove(field_file);

  const at::Tensor inside = inside_with_margin(u);
  ASSERT_GT(inside.sum().item<int64_t>(), ours.numel() / 3);
  const double range = (moving.max() - moving.min()).item<double>();
  const double diff = (ours - theirs).abs().masked_select(inside).max().item<double>();
  EXPECT_LT(diff, 1e-3 * range);
  // io::sample_at through the same map (how register and apply write their outputs)
  // gives ITK's values everywhere, the volume's edges included: both take the volume to
  // be its voxels' extent.
  const at::Tensor sampled = io::sample_at({moving, g}, io::physical_points(g) + io::voxel_to_physical(u, g));
  EXPECT_LT((sampled - theirs).abs().max().item<double>(), 1e-4 * range);
  EXPECT_LT(inside.sum().item<int64_t>(), ours.numel());  // the map does reach the edges
}

INSTANTIATE_TEST_SUITE_P(Formats, FieldInterop, ::testing::Values(".nii.gz", ".h5"),
                         [](const auto& info) { return info.param == ".h5" ? "h5" : "nifti"; });

}  // namespace
}  // namespace autoreg::test
