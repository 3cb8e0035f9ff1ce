// Field smoothness and soft Dice.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "autoreg/registration/regularization.h"

namespace autoreg::test {
namespace {

namespace reg = autoreg::registration;

TEST(GradientL2, ZeroForConstantAndExactForARamp) {
  EXPECT_EQ(reg::gradient_l2(at::full({1, 3, 4, 5, 6}, 2.5)).item<double>(), 0.0);
  // 0.5 per voxel along W only: mean squared difference 0.25 on that axis.
  const at::Tensor ramp = (at::arange(6, at::kDouble) * 0.5).view({1, 1, 1, 1, 6}).expand({1, 3, 4, 5, 6});
  EXPECT_NEAR(reg::gradient_l2(ramp).item<double>(), 0.25, 1e-12);
  // Gradient flows: a rough field's smoothness decreases along its negative gradient.
  at::manual_seed(3);
  const at::Tensor f = at::randn({1, 3, 5, 5, 5}, at::kDouble).requires_grad_();
  const at::Tensor loss = reg::gradient_l2(f);
  loss.backward();
  const double after = reg::gradient_l2(f.detach() - 0.01 * f.grad()).item<double>();
  EXPECT_LT(after, loss.item<double>());
}

TEST(SoftDice, PerfectDisjointAndPartialOverlap) {
  at::Tensor a = at::zeros({1, 2, 4, 4, 4});
  a.select(1, 0).slice(1, 0, 2).fill_(1);  // label 0: the first half along D
  a.select(1, 1).slice(1, 2, 4).fill_(1);  // label 1: the second half
  EXPECT_NEAR(reg::soft_dice_loss(a, a).item<double>(), 0.0, 1e-6);
  EXPECT_NEAR(reg::soft_dice_loss(a, a.flip({1})).item<double>(), 1.0, 1e-6);  // labels swapped
  // Shifted by one slice: each label overlaps in 1 of its 2 slices → Dice 1/2.
  const at::Tensor shifted = at::roll(a, {1}, {2});
  EXPECT_NEAR(reg::soft_dice_loss(a, shifted).item<double>(), 0.5, 1e-6);
  // A channel absent from both maps counts as perfect.
  const at::Tensor with_empty = at::cat({a, at::zeros({1, 1, 4, 4, 4})}, 1);
  EXPECT_NEAR(reg::soft_dice_loss(with_empty, with_empty).item<double>(), 0.0, 1e-6);
  EXPECT_THROW(reg::soft_dice_loss(a, a.slice(1, 0, 1)), c10::Error);
}

}  // namespace
}  // namespace autoreg::test
