// The model frame: a model that names its axes (ModelInfo::orientation) sees the same
// tensors for the same anatomy whatever the voxel order of the fixed image's file; a
// model that names none works on the fixed image's own axes (models from before).
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "autoreg/io/grid.h"
#include "autoreg/pair/frame.h"

namespace autoreg::test {
namespace {

// A 24³ volume at 1 mm with an off-centre bright box and a blob in it (no symmetry).
io::Volume phantom() {
  io::Volume v;
  v.geometry.size = {24, 24, 24};
  v.geometry.origin = {-11, 7, 30};
  const at::Tensor k = at::arange(24, at::kFloat);
  const at::Tensor z = k.view({24, 1, 1}), y = k.view({1, 24, 1}), x = k.view({1, 1, 24});
  const at::Tensor box = ((z >= 3) * (z < 17) * (y >= 6) * (y < 22) * (x >= 2) * (x < 13)).to(at::kFloat);
  const at::Tensor blob = at::exp(-((z - 8).pow(2) + (y - 15).pow(2) * 0.5 + (x - 5).pow(2) * 2) / 20);
  v.data = (0.3 * box + 0.7 * blob * box).unsqueeze(0).unsqueeze(0).contiguous();
  return v;
}

TEST(ModelFrame, AModelsOwnAxesMakeTheFrameIndependentOfTheFilesVoxelOrder) {
  const io::Volume lps = phantom();
  // The same anatomy stored with its voxel axes towards Superior, Left and Posterior:
  // every voxel centre coincides with one of lps's, so resampling only reorders values.
  const io::Volume slp = io::resample(lps, io::with_orientation(lps.geometry, "SLP"), io::Resampling::Linear);
  ASSERT_NEAR(slp.data.sum().item<double>(), lps.data.sum().item<double>(), 1e-3);
  registration::ModelInfo info;
  info.grid = {10, 12, 14};
  info.spacing = {1.5, 2, 1};
  info.orientation = "ASL";
  const io::Geometry a = pipeline::model_frame(lps, info), b = pipeline::model_frame(slp, info);
  const io::Geometry want_axes = io::with_orientation(lps.geometry, "ASL");
  for (int i = 0; i < 9; ++i) {
    EXPECT_EQ(a.direction[i], want_axes.direction[i]) << i;
    EXPECT_EQ(b.direction[i], want_axes.direction[i]) << i;
  }
  for (int r = 0; r < 3; ++r) EXPECT_NEAR(a.origin[r], b.origin[r], 1e-9) << r;
  EXPECT_EQ(a.size, (std::array<int64_t, 3>{14, 12, 10}));
  const at::Tensor eye = at::eye(4, at::kDouble);
  const at::Tensor seen_a = pipeline::on_frame(lps, eye, a), seen_b = pipeline::on_frame(slp, eye, b);
  EXPECT_GT(seen_a.sum().item<double>(), 10);
  EXPECT_TRUE(at::allclose(seen_a, seen_b, 1e-5, 1e-6));

  // Without a stored orientation the frame follows each file's axes: other tensors.
  info.orientation.clear();
  const io::Geometry own_a = pipeline::model_frame(lps, info), own_b = pipeline::model_frame(slp, info);
  EXPECT_EQ(own_a.direction, lps.geometry.direction);
  EXPECT_EQ(own_b.direction, slp.geometry.direction);
  // Either way the frame is centred on the foreground box.
  const auto centre = [](const io::Geometry& g) {
    std::array<double, 3> c = g.origin;
    for (int r = 0; r < 3; ++r)
      for (int k = 0; k < 3; ++k) c[r] += g.direction[3 * r + k] * g.spacing[k] * 0.5 * double(g.size[k] - 1);
    return c;
  };
  for (int r = 0; r < 3; ++r) {
    EXPECT_NEAR(centre(a)[r], centre(own_a)[r], 1e-9) << r;
    EXPECT_NEAR(centre(b)[r], centre(own_b)[r], 1e-9) << r;
  }
}

}  // namespace
}  // namespace autoreg::test
