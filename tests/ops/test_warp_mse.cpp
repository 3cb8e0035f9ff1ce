// ops::warped_mse: the fused CPU kernel against the composite it replaces (warp, the
// squared difference, the mean), value and gradient, with and without a weight, for both
// paddings and both precisions; and its gradient against finite differences.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/autograd.h>

#include <tuple>

#include "helpers.h"

namespace autoreg::test {
namespace {

using ops::Padding;

at::Tensor composite(const at::Tensor& image, const at::Tensor& target, const at::Tensor& u, Padding pad,
                     const at::Tensor& weight) {
  const at::Tensor sq = (ops::warp(image, u, ops::Interpolation::Linear, pad) - target).pow(2);
  if (!weight.defined()) return sq.mean();
  return (sq.mean(1, /*keepdim=*/true) * weight).sum() / (weight.sum() + 1e-8);
}

// The loss and its gradient with respect to u.
std::tuple<at::Tensor, at::Tensor> loss_and_grad(bool fused, const at::Tensor& image, const at::Tensor& target,
                                                 at::Tensor u, Padding pad, const at::Tensor& weight) {
  u = u.detach().clone().requires_grad_();
  const at::Tensor loss = fused ? ops::warped_mse(image, target, u, pad, weight) : composite(image, target, u, pad, weight);
  const at::Tensor grad = torch::autograd::grad({loss}, {u})[0];
  return {loss.detach(), grad};
}

class WarpMse : public ::testing::TestWithParam<std::tuple<Padding, bool, at::ScalarType>> {};

TEST_P(WarpMse, MatchesTheComposite) {
  const auto [pad, weighted, dtype] = GetParam();
  at::manual_seed(3);
  const auto opts = at::TensorOptions().dtype(dtype);
  const at::Tensor image = at::randn({2, 12, 9, 10, 70}, opts);  // W > one block of 64 voxels
  const at::Tensor target = at::randn({2, 12, 9, 10, 70}, opts);
  const at::Tensor u = (at::rand({2, 3, 9, 10, 70}, opts) * 2 - 1) * 3;  // reaches past the borders
  const at::Tensor weight = weighted ? (at::rand({2, 1, 9, 10, 70}, opts) > 0.4).to(dtype) : at::Tensor();
  const auto [loss, grad] = loss_and_grad(true, image, target, u, pad, weight);
  const auto [loss_ref, grad_ref] = loss_and_grad(false, image, target, u, pad, weight);
  const double tol = dtype == at::kFloat ? 1e-5 : 1e-12;
  EXPECT_NEAR(loss.item<double>(), loss_ref.item<double>(), tol * loss_ref.item<double>());
  EXPECT_LT(relative_error(grad, grad_ref), dtype == at::kFloat ? 1e-4 : 1e-10);
  EXPECT_GT(grad.abs().max().item<double>(), 0);
}

INSTANTIATE_TEST_SUITE_P(Paddings, WarpMse,
                         ::testing::Combine(::testing::Values(Padding::Zeros, Padding::Border),
                                            ::testing::Bool(), ::testing::Values(at::kFloat, at::kDouble)));

TEST(WarpMse, GradientMatchesFiniteDifferences) {
  at::manual_seed(5);
  const at::Tensor image = at::randn({1, 3, 4, 5, 6}, at::kDouble);
  const at::Tensor target = at::randn({1, 3, 4, 5, 6}, at::kDouble);
  const at::Tensor u = (at::rand({1, 3, 4, 5, 6}, at::kDouble) * 2 - 1) * 1.7;
  const auto [loss, grad] = loss_and_grad(true, image, target, u, Padding::Zeros, at::Tensor());
  at::Tensor numeric = at::zeros_like(u);
  const double h = 1e-6;
  for (int64_t i = 0; i < u.numel(); ++i) {
    at::Tensor p = u.clone(), m = u.clone();
    p.view({-1})[i] += h;
    m.view({-1})[i] -= h;
    numeric.view({-1})[i] = (ops::warped_mse(image, target, p).item<double>() -
                             ops::warped_mse(image, target, m).item<double>()) / (2 * h);
  }
  EXPECT_LT(relative_error(grad, numeric), 1e-6);
}

TEST(WarpMse, LossDoesNotDependOnTheThreadCount) {
  at::manual_seed(7);
  const at::Tensor image = at::randn({1, 12, 16, 20, 24});
  const at::Tensor target = at::randn({1, 12, 16, 20, 24});
  const at::Tensor u = at::randn({1, 3, 16, 20, 24}) * 2;
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const double one = ops::warped_mse(image, target, u).item<double>();
  at::set_num_threads(2);
  const double two = ops::warped_mse(image, target, u).item<double>();
  at::set_num_threads(threads);
  EXPECT_EQ(one, two);
}

TEST(WarpMse, RejectsATargetOfOtherChannels) {
  const at::Tensor image = at::zeros({1, 2, 3, 3, 3}), target = at::zeros({1, 3, 3, 3, 3});
  EXPECT_THROW(ops::warped_mse(image, target, at::zeros({1, 3, 3, 3, 3})), c10::Error);
}

}  // namespace
}  // namespace autoreg::test
