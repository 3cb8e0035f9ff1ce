// Affine transform files and sampling at physical points: round trips, ITK reading our
// files, and ITK's resampling agreeing with ours.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <itkTransformFileReader.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "autoreg/io/field.h"
#include "autoreg/io/grid.h"
#include "autoreg/io/transform.h"
#include "itk_resample.h"

namespace autoreg::test {
namespace {

namespace fs = std::filesystem;
using io::Geometry;

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("autoreg-transform-" + std::to_string(::getpid()) + "-" + name)).string();
}

Geometry oblique_grid() {
  Geometry g;
  g.size = {22, 19, 17};
  g.spacing = {1.1, 0.9, 1.7};
  g.origin = {-12.3, 4.1, -7.7};
  const double c = std::cos(0.4), s = std::sin(0.4);
  g.direction = {c, 0, s, 0, 1, 0, -s, 0, c};  // rotated about y
  return g;
}

at::Tensor test_affine() {
  return at::tensor({0.98, 0.05, -0.03, 1.5, -0.04, 1.02, 0.06, -2.25, 0.02, -0.05, 0.97, 0.75,
                     0.0, 0.0, 0.0, 1.0},
                    at::kDouble)
      .view({4, 4});
}

class AffineFiles : public ::testing::TestWithParam<std::string> {};

TEST_P(AffineFiles, RoundTripIsExact) {
  const std::string file = temp_path("affine" + GetParam());
  io::write_affine(file, test_affine());
  const at::Tensor back = io::read_affine(file);
  fs::remove(file);
  EXPECT_TRUE(at::allclose(back, test_affine(), 0, 1e-12)) << back;
}

INSTANTIATE_TEST_SUITE_P(Formats, AffineFiles, ::testing::Values(".tfm", ".txt", ".mat", ".h5"),
                         [](const auto& info) { return info.param.substr(1); });

TEST(Affine, ItkResampleWithOurFileMatchesSampleAt) {
  at::manual_seed(11);
  const Geometry g = oblique_grid();
  const at::Tensor data =
      at::upsample_trilinear3d(at::rand({1, 1, 5, 5, 5}) * 100, {g.size[2], g.size[1], g.size[0]}, true);
  const std::string tfm = temp_path("ours.tfm");
  io::write_affine(tfm, test_affine());
  auto reader = itk::TransformFileReaderTemplate<double>::New();
  reader->SetFileName(tfm);
  reader->Update();
  fs::remove(tfm);
  using Transform = itk::Transform<double, 3, 3>;
  auto* transform = dynamic_cast<Transform*>(reader->GetTransformList()->front().GetPointer());
  ASSERT_NE(transform, nullptr);

  const std::string image_file = temp_path("image.nii.gz");
  io::write_volume(image_file, {data, g});
  const at::Tensor theirs = itk_resample(image_file, transform);
  fs::remove(image_file);

  const at::Tensor points = io::transform_points(test_affine(), io::physical_points(g));
  const at::Tensor ours = io::sample_at({data, g}, points);
  // Where both sample inside with a voxel to spare (ITK clamps at the very edge).
  const at::Tensor inside = inside_with_margin(io::physical_to_voxel(points - io::physical_points(g), g));
  ASSERT_GT(inside.sum().item<int64_t>(), ours.numel() / 4);
  EXPECT_LT((ours - theirs).abs().masked_select(inside).max().item<double>(), 1e-3 * 100);
}

TEST(Affine, BadFilesNameTheFileAndTheProblem) {
  EXPECT_THROW(io::read_affine(temp_path("missing.tfm")), io::IoError);
  // read_affine(file) throws an IoError whose message holds `text`; the file is removed.
  const auto expect_refused = [](const std::string& file, const std::string& text, const char* what) {
    try {
      io::read_affine(file);
      ADD_FAILURE() << "no error for " << what;
    } catch (const io::IoError& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
    fs::remove(file);
  };
  const std::string junk = temp_path("junk.tfm");
  std::ofstream(junk) << "not a transform\n";
  expect_refused(junk, junk, "a file that holds no transform");
  // A Matlab v4 matrix that declares 2.4·10⁹ rows in a 40-byte file: refused before ITK
  // allocates them (fuzz_transform found ITK allocating 22 GB).
  const std::string bomb = temp_path("bomb.mat");
  {
    const uint32_t header[5] = {0, 0x9300000cu, 1, 0, 4};
    std::ofstream f(bomb, std::ios::binary);
    f.write(reinterpret_cast<const char*>(header), sizeof header);
    f.write("abc\0", 4);
    f.write(std::string(16, '\0').data(), 16);
  }
  expect_refused(bomb, "more than the file holds", "a .mat that declares more than it holds");
  // A displacement field is not an affine.
  const std::string field = temp_path("field.h5");
  Geometry g;
  g.size = {4, 4, 4};
  io::write_displacement_field(field, at::zeros({1, 3, 4, 4, 4}), g);
  expect_refused(field, "not an affine", "a displacement field read as an affine");
}

TEST(SampleAt, MatchesItkResamplingOntoAnotherGrid) {
  at::manual_seed(12);
  const Geometry from = oblique_grid();
  Geometry to;
  to.size = {15, 14, 13};
  to.spacing = {1.3, 1.2, 1.25};
  to.origin = {-8.2, 5.3, -4.1};
  const at::Tensor data =
      at::upsample_trilinear3d(at::rand({1, 1, 5, 5, 5}), {from.size[2], from.size[1], from.size[0]}, true);
  const io::Volume v{data, from};
  const at::Tensor ours = io::sample_at(v, io::physical_points(to));
  const at::Tensor itk = io::resample(v, to, io::Resampling::Linear).data;
  // Compare where the point is inside `from` with a voxel to spare (at the very edge ITK
  // clamps neighbours where zeros padding blends with zero).
  const at::Tensor to_index = at::inverse(io::index_to_world(from)).to(at::kFloat);
  const at::Tensor p = io::physical_points(to);
  at::Tensor both = at::ones_like(ours, at::kBool);
  for (int a = 0; a < 3; ++a) {
    const at::Tensor idx = p.select(1, 0) * to_index[a][0].item<float>() + p.select(1, 1) * to_index[a][1].item<float>() +
                           p.select(1, 2) * to_index[a][2].item<float>() + to_index[a][3].item<float>();
    both = both & (idx.unsqueeze(1) >= 1) & (idx.unsqueeze(1) <= from.size[a] - 2);
  }
  ASSERT_GT(both.sum().item<int64_t>(), ours.numel() / 4);
  EXPECT_LT((ours - itk).abs().masked_select(both).max().item<double>(), 1e-4);
  // Labels: nearest neighbour, values kept.
  const io::Volume labels{(data * 6).floor().to(at::kInt), from};
  const at::Tensor l_ours = io::sample_at(labels, io::physical_points(to));
  const at::Tensor l_itk = io::resample(labels, to, io::Resampling::Nearest).data;
  EXPECT_EQ(l_ours.scalar_type(), at::kInt);
  const double mismatch = (l_ours != l_itk).to(at::kFloat).mean().item<double>();
  EXPECT_LT(mismatch, 0.01);  // ties at exactly half a voxel may round either way
}

TEST(PhysicalPoints, FirstVoxelIsTheOriginAndStepsFollowTheDirection) {
  const Geometry g = oblique_grid();
  const at::Tensor p = io::physical_points(g);
  EXPECT_EQ(p.sizes(), at::IntArrayRef({1, 3, 17, 19, 22}));
  for (int r = 0; r < 3; ++r) {
    EXPECT_NEAR(p[0][r][0][0][0].item<double>(), g.origin[r], 1e-5);
    // One step along i (tensor W) moves by spacing[0] along direction column 0.
    EXPECT_NEAR((p[0][r][0][0][1] - p[0][r][0][0][0]).item<double>(), g.direction[r * 3] * g.spacing[0], 1e-5);
  }
}

}  // namespace
}  // namespace autoreg::test
