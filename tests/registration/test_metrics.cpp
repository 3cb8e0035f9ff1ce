// Dice, HD95 (against a brute-force all-pairs computation) and Jacobian statistics.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cmath>

#include "autoreg/ops.h"
#include "autoreg/registration/metrics.h"

namespace autoreg::test {
namespace {

namespace reg = autoreg::registration;

TEST(Metrics, DiceOfOverlappingBoxes) {
  at::Tensor a = at::zeros({1, 1, 10, 10, 10}, at::kInt), b = at::zeros_like(a);
  a.slice(2, 0, 5).fill_(3);  // 500 voxels
  b.slice(2, 2, 7).fill_(3);  // 500 voxels, 300 shared
  EXPECT_DOUBLE_EQ(reg::dice(a, b, 3), 0.6);
  EXPECT_DOUBLE_EQ(reg::dice(a, b, 9), 1.0);  // absent from both
  EXPECT_EQ(reg::labels_present(a, b), (std::vector<int64_t>{3}));
}

TEST(Metrics, Hd95OfSingleVoxelsWithAnisotropicSpacing) {
  at::Tensor a = at::zeros({1, 1, 8, 8, 8}, at::kInt), b = at::zeros_like(a);
  a[0][0][2][2][2] = 1;
  b[0][0][5][4][2] = 1;
  // 3 voxels along D at 2 mm, 2 along H at 1 mm.
  EXPECT_NEAR(reg::hd95(a, b, 1, {2.0, 1.0, 1.0}), std::sqrt(36.0 + 4.0), 1e-9);
  EXPECT_TRUE(std::isnan(reg::hd95(a, b, 2, {1, 1, 1})));
}

// Surface voxels and all-pairs distances, by the definition.
std::vector<std::array<int64_t, 3>> surface_voxels(const at::Tensor& m) {
  std::vector<std::array<int64_t, 3>> out;
  auto A = m.accessor<bool, 3>();
  const int64_t n[3] = {m.size(0), m.size(1), m.size(2)};
  for (int64_t d = 0; d < n[0]; ++d)
    for (int64_t h = 0; h < n[1]; ++h)
      for (int64_t w = 0; w < n[2]; ++w) {
        if (!A[d][h][w]) continue;
        bool edge = false;
        const int64_t p[3] = {d, h, w};
        for (int ax = 0; ax < 3; ++ax)
          for (int s : {-1, 1}) {
            int64_t q[3] = {p[0], p[1], p[2]};
            q[ax] += s;
            edge = edge || q[ax] < 0 || q[ax] >= n[ax] || !A[q[0]][q[1]][q[2]];
          }
        if (edge) out.push_back({d, h, w});
      }
  return out;
}

double brute_directed95(const std::vector<std::array<int64_t, 3>>& from,
                        const std::vector<std::array<int64_t, 3>>& to, const std::array<double, 3>& sp) {
  std::vector<double> dist;
  for (const auto& p : from) {
    double best = 1e300;
    for (const auto& q : to) {
      double s = 0;
      for (int a = 0; a < 3; ++a) s += std::pow((p[a] - q[a]) * sp[a], 2);
      best = std::min(best, std::sqrt(s));
    }
    dist.push_back(best);
  }
  std::sort(dist.begin(), dist.end());
  return dist[std::llround(0.95 * double(dist.size() - 1))];
}

TEST(Metrics, Hd95MatchesBruteForceOnRandomBlobs) {
  at::manual_seed(8);
  const std::array<double, 3> spacing = {1.7, 0.8, 1.1};
  for (int trial = 0; trial < 3; ++trial) {
    auto blob = [] {
      const at::Tensor c = at::rand({1, 1, 3, 3, 3}, at::kDouble);
      return (at::upsample_trilinear3d(c, {12, 14, 10}, true) > 0.5).to(at::kInt);
    };
    const at::Tensor a = blob(), b = blob();
    if (!a.any().item<bool>() || !b.any().item<bool>()) continue;
    const auto sa = surface_voxels(a[0][0].to(at::kBool)), sb = surface_voxels(b[0][0].to(at::kBool));
    const double want = std::max(brute_directed95(sa, sb, spacing), brute_directed95(sb, sa, spacing));
    EXPECT_NEAR(reg::hd95(a, b, 1, spacing), want, 1e-9) << "trial " << trial;
  }
}

TEST(Metrics, JacobianStats) {
  const auto identity = reg::jacobian_stats(at::zeros({1, 3, 6, 6, 6}));
  EXPECT_EQ(identity.non_positive_percent, 0.0);
  EXPECT_EQ(identity.log_std, 0.0);
  // u_D(x) = -2·d folds every voxel (det = 1 - 2 < 0).
  at::Tensor fold = at::zeros({1, 3, 6, 6, 6});
  fold.select(1, 0).copy_(at::arange(6, at::kFloat).view({1, 6, 1, 1}).expand({1, 6, 6, 6}) * -2);
  EXPECT_EQ(reg::jacobian_stats(fold).non_positive_percent, 100.0);
}

TEST(Metrics, JacobianStatsInSlabsEqualTheWholeVolume) {
  // A rough field, deep enough for several slabs, folding in places.
  at::manual_seed(21);
  const at::Tensor u = at::upsample_trilinear3d(at::randn({1, 3, 8, 4, 4}, at::kDouble) * 3, {53, 9, 7}, true);
  const at::Tensor det = ops::jacobian_determinant(u);
  const double non_positive = 100.0 * (det <= 0).sum().item<double>() / double(det.numel());
  const double log_std = det.masked_select(det > 0).log().std().item<double>();
  ASSERT_GT(non_positive, 0.0);
  ASSERT_LT(non_positive, 100.0);
  const auto s = reg::jacobian_stats(u);
  EXPECT_NEAR(s.non_positive_percent, non_positive, 1e-9);
  EXPECT_NEAR(s.log_std, log_std, 1e-9);
}

// A float32 field on the CPU takes the one-pass kernel: the same figures as
// ops::jacobian_determinant gives, on every face and along axes of length 1 and 2.
TEST(Metrics, JacobianStatsOfAFloatFieldInOnePass) {
  at::manual_seed(22);
  for (const auto& size : {std::vector<int64_t>{23, 9, 7}, std::vector<int64_t>{5, 1, 6}, std::vector<int64_t>{2, 7, 3}}) {
    const at::Tensor u = at::upsample_trilinear3d(at::randn({1, 3, 4, 4, 4}, at::kDouble) * 3, size, true).to(at::kFloat);
    const at::Tensor det = ops::jacobian_determinant(u.to(at::kDouble));
    const double non_positive = 100.0 * (det <= 0).sum().item<double>() / double(det.numel());
    const double log_std = det.masked_select(det > 0).log().std().item<double>();
    const auto s = reg::jacobian_stats(u);
    EXPECT_NEAR(s.non_positive_percent, non_positive, 1e-9) << size;
    EXPECT_NEAR(s.log_std, log_std, 1e-9) << size;
  }
}

TEST(Metrics, MeanDiceOverTheReferencesLabels) {
  at::manual_seed(9);
  const at::Tensor a = at::randint(0, 6, {1, 1, 9, 8, 7}, at::kInt) * 300;  // labels 0, 300, ..., 1500
  at::Tensor b = at::randint(0, 6, {1, 1, 9, 8, 7}, at::kInt) * 300;
  b.masked_fill_(b.eq(1500), 7);  // 1500 is missing from b (scores 0), 7 is not in a (not counted)
  double sum = 0;
  for (int64_t l : {300, 600, 900, 1200, 1500}) sum += registration::dice(a, b, l);
  EXPECT_NEAR(registration::mean_dice_over_reference(a, b), sum / 5, 1e-12);
  EXPECT_EQ(registration::dice(a, b, 1500), 0.0);
  EXPECT_DOUBLE_EQ(registration::mean_dice_over_reference(a, a), 1.0);
  EXPECT_TRUE(std::isnan(registration::mean_dice_over_reference(at::zeros_like(a), b)));
}

}  // namespace
}  // namespace autoreg::test
