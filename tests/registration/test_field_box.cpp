// The foreground box of a pair and the field brought back from it
// (registration/field_box.h).
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <vector>

#include "autoreg/ops.h"
#include "autoreg/registration/field_box.h"

namespace autoreg::test {
namespace {

// The box holds every voxel above 0.02 in either image, with the margin, clipped to the
// volume; both images empty: the whole volume. crop takes exactly the box.
TEST(FieldBox, HoldsTheForegroundOfEitherImageWithItsMargin) {
  at::Tensor a = at::zeros({1, 1, 10, 12, 14}), b = at::zeros({1, 1, 10, 12, 14});
  a.index_put_({0, 0, 2, 3, 4}, 1.0);
  b.index_put_({0, 0, 6, 9, 12}, 0.5);
  b.index_put_({0, 0, 7, 1, 1}, 0.01);  // below the threshold: not foreground
  const registration::Box box = registration::foreground_box(a, b, 1);
  EXPECT_EQ(box[0][0], 1);
  EXPECT_EQ(box[0][1], 8);
  EXPECT_EQ(box[1][0], 2);
  EXPECT_EQ(box[1][1], 11);
  EXPECT_EQ(box[2][0], 3);
  EXPECT_EQ(box[2][1], 14);  // 12 + 1 + 1 clipped to the volume's 14
  const at::Tensor c = registration::crop(a, box);
  EXPECT_EQ(c.sizes(), (std::vector<int64_t>{1, 1, 7, 9, 11}));
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(c.sum().item<float>(), 1.0f);
  const registration::Box empty = registration::foreground_box(at::zeros_like(a), at::zeros_like(a), 2);
  EXPECT_EQ(empty[0][1] - empty[0][0], 10);
  EXPECT_EQ(empty[1][1] - empty[1][0], 12);
  EXPECT_EQ(empty[2][1] - empty[2][0], 14);
}

// expand_field is upsampling (corners aligned, vectors rescaled), replication outside
// the box and composition, done in one pass: the same as the three operations in turn.
TEST(ExpandField, IsUpsampleThenUncropThenCompose) {
  at::manual_seed(3);
  const std::vector<int64_t> full = {21, 18, 25};
  const registration::Box box{{{3, 16}, {0, 18}, {5, 24}}};  // 13 × 18 × 19 voxels
  const at::Tensor coarse = at::randn({1, 3, 7, 9, 10}) * 1.5;
  // The reference: upsample_trilinear3d with corners aligned, each channel rescaled.
  const at::Tensor up = at::upsample_trilinear3d(coarse, {13, 18, 19}, /*align_corners=*/true);
  const at::Tensor scale = at::tensor({12.0 / 6, 17.0 / 8, 18.0 / 9}).view({1, 3, 1, 1, 1}).to(at::kFloat);
  const at::Tensor r = registration::uncrop_replicate(up * scale, box, full);
  EXPECT_TRUE(at::allclose(registration::expand_field(coarse, box, full), r, 1e-5, 1e-5));
  const at::Tensor then = at::randn({1, 3, 21, 18, 25}) * 2;
  const at::Tensor want = ops::compose(then, r);
  const at::Tensor got = registration::expand_field(coarse, box, full, then);
  EXPECT_LT((got - want).abs().max().item<double>(), 1e-4);
  // A box that is the whole volume and a coarse axis of one voxel.
  const registration::Box all{{{0, 4}, {0, 1}, {0, 6}}};
  const at::Tensor c2 = at::randn({1, 3, 2, 1, 3});
  const at::Tensor up2 = at::upsample_trilinear3d(c2, {4, 1, 6}, true) *
                         at::tensor({3.0, 0.0, 5.0 / 2}).view({1, 3, 1, 1, 1}).to(at::kFloat);
  EXPECT_TRUE(at::allclose(registration::expand_field(c2, all, {4, 1, 6}), up2, 1e-5, 1e-5));
}


}  // namespace
}  // namespace autoreg::test
