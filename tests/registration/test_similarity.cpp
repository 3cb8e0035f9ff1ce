// Similarity terms: local NCC and MIND-SSC.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <stdexcept>

#include "autoreg/registration/similarity.h"

namespace autoreg::test {
namespace {

namespace reg = autoreg::registration;

at::Tensor smooth_random(int64_t seed, int64_t n) {
  at::manual_seed(seed);
  return at::upsample_trilinear3d(at::rand({1, 1, 5, 5, 5}), {n, n, n}, true);
}

TEST(LocalNcc, IsOneForIdenticalAndAffinelyRelatedImages) {
  at::manual_seed(1);
  const at::Tensor a = at::rand({1, 1, 12, 12, 12});
  EXPECT_NEAR(reg::local_ncc(a, a, 5).item<double>(), 1.0, 1e-4);
  EXPECT_NEAR(reg::local_ncc(a, a * 3 + 1, 5).item<double>(), 1.0, 1e-4);
  // Smooth images, whose local variance is small, too.
  const at::Tensor s = smooth_random(2, 16);
  EXPECT_NEAR(reg::local_ncc(s, s, 5).item<double>(), 1.0, 1e-3);
  EXPECT_LT(reg::local_ncc(a, at::rand({1, 1, 12, 12, 12}), 5).item<double>(), 0.3);
}

// A per-axis window: a cube given as three equal lengths is the cubic window; an
// anisotropic one is 1 for identical images and differs from the cube on other images;
// a window longer than its axis is clipped to the axis.
TEST(LocalNcc, PerAxisWindows) {
  at::manual_seed(4);
  const at::Tensor a = at::rand({1, 1, 6, 12, 12}), b = at::rand({1, 1, 6, 12, 12});
  EXPECT_TRUE(at::allclose(reg::local_ncc_map(a, b, reg::NccWindow{5, 5, 5}), reg::local_ncc_map(a, b, 5)));
  EXPECT_NEAR(reg::local_ncc_map(a, a * 2 + 1, reg::NccWindow{3, 7, 7}).mean().item<double>(), 1.0, 1e-4);
  EXPECT_GT((reg::local_ncc_map(a, b, reg::NccWindow{1, 7, 7}) - reg::local_ncc_map(a, b, 7)).abs().max().item<double>(), 1e-3);
  EXPECT_TRUE(at::allclose(reg::local_ncc_map(a, b, reg::NccWindow{9, 5, 5}), reg::local_ncc_map(a, b, reg::NccWindow{5, 5, 5})));
  EXPECT_NEAR(reg::similarity_loss(reg::Similarity::Ncc, a, b, reg::NccWindow{3, 5, 7}).item<double>(),
              1 - reg::local_ncc_map(a, b, reg::NccWindow{3, 5, 7}).mean().item<double>(), 1e-6);
}

TEST(MindSsc, TwelveChannelsInUnitInterval) {
  const at::Tensor d = reg::mind_ssc(smooth_random(3, 16));
  EXPECT_EQ(d.sizes(), at::IntArrayRef({1, 12, 16, 16, 16}));
  EXPECT_GT(d.min().item<double>(), 0.0);
  EXPECT_LE(d.max().item<double>(), 1.0 + 1e-6);
  // The smallest patch distance of every voxel is subtracted: one channel is exp(0) = 1.
  EXPECT_NEAR(std::get<0>(d.max(1)).min().item<double>(), 1.0, 1e-6);
}

TEST(MindSsc, IgnoresContrastInversionAndScalingButSeesMisalignment) {
  const at::Tensor a = smooth_random(4, 20);
  // An inverted, rescaled contrast (a "T2" of the same anatomy) has the same descriptors...
  const double same = reg::similarity_loss(reg::Similarity::Mind, a, 0.5 - 2 * a).item<double>();
  EXPECT_LT(same, 1e-8);
  // ...while the same image shifted by two voxels does not; MSE cannot tell them apart.
  const at::Tensor shifted = at::roll(a, {2}, {2});
  const double moved = reg::similarity_loss(reg::Similarity::Mind, a, shifted).item<double>();
  EXPECT_GT(moved, 1e-4);
  EXPECT_GT(reg::similarity_loss(reg::Similarity::Mse, a, 0.5 - 2 * a).item<double>(),
            reg::similarity_loss(reg::Similarity::Mse, a, shifted).item<double>());
}

TEST(MindSsc, ConstantImageIsFinite) {
  const at::Tensor d = reg::mind_ssc(at::ones({1, 1, 8, 8, 8}));
  EXPECT_TRUE(at::isfinite(d).all().item<bool>());
}

TEST(SimilarityLoss, ZeroForIdenticalImagesAndNamesUnknownKinds) {
  at::manual_seed(5);
  const at::Tensor a = at::rand({1, 1, 12, 12, 12});
  for (const char* kind : {"ncc", "mse", "mind"}) {
    EXPECT_NEAR(reg::similarity_loss(reg::parse_similarity(kind), a, a).item<double>(), 0.0, 5e-3) << kind;
    EXPECT_STREQ(reg::similarity_name(reg::parse_similarity(kind)), kind);
  }
  try {
    reg::parse_similarity("nmi");
    FAIL() << "no error for an unknown similarity";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("nmi"), std::string::npos);
  }
}

}  // namespace
}  // namespace autoreg::test
