// Analytic gradients of warp, compose, integrate and jacobian_determinant against
// float64 central finite differences on small random volumes.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/autograd.h>

#include <functional>

#include "helpers.h"

namespace autoreg::test {
namespace {

using ops::Interpolation;
using ops::Padding;
using Fn = std::function<at::Tensor(const std::vector<at::Tensor>&)>;

// Compares d(Σ f(x)·R)/dx_i from autograd with central differences of step h, for
// every element of every input. Returns the largest relative error over inputs.
double max_gradient_error(const Fn& f, std::vector<at::Tensor> inputs, double h = 1e-6) {
  for (auto& t : inputs) t = t.detach().clone().requires_grad_();
  const at::Tensor R = at::randn(f(inputs).sizes(), at::kDouble);
  const at::Tensor loss = (f(inputs) * R).sum();
  const auto analytic = torch::autograd::grad({loss}, inputs);
  double worst = 0;
  c10::AutoGradMode no_grad(false);
  for (size_t k = 0; k < inputs.size(); ++k) {
    at::Tensor x = inputs[k].detach().clone();
    at::Tensor numeric = at::zeros_like(x);
    auto flat = x.view({-1});
    auto num = numeric.view({-1});
    for (int64_t i = 0; i < flat.numel(); ++i) {
      const double x0 = flat[i].item<double>();
      std::vector<at::Tensor> args(inputs.begin(), inputs.end());
      for (auto& a : args) a = a.detach();
      args[k] = x;
      flat[i] = x0 + h;
      const double fp = (f(args) * R).sum().item<double>();
      flat[i] = x0 - h;
      const double fm = (f(args) * R).sum().item<double>();
      flat[i] = x0;
      num[i] = (fp - fm) / (2 * h);
    }
    worst = std::max(worst, relative_error(analytic[k], numeric));
  }
  return worst;
}

class WarpGradient : public ::testing::TestWithParam<Padding> {};

TEST_P(WarpGradient, LinearMatchesFiniteDifferences) {
  at::manual_seed(10);
  const Padding pad = GetParam();
  const at::Tensor image = at::randn({1, 2, 5, 6, 7}, at::kDouble);
  const at::Tensor disp = (at::rand({1, 3, 5, 6, 7}, at::kDouble) * 2 - 1) * 2.5;
  const double err = max_gradient_error(
      [&](const std::vector<at::Tensor>& a) {
        return ops::warp(a[0], a[1], Interpolation::Linear, pad);
      },
      {image, disp});
  EXPECT_LT(err, 1e-6);
}

TEST_P(WarpGradient, NearestImageGradientMatchesAndFieldGradientIsZero) {
  at::manual_seed(11);
  const Padding pad = GetParam();
  const at::Tensor image = at::randn({2, 1, 5, 6, 7}, at::kDouble).requires_grad_();
  const at::Tensor disp = ((at::rand({2, 3, 5, 6, 7}, at::kDouble) * 2 - 1) * 2.5).requires_grad_();
  const double err = max_gradient_error(
      [&](const std::vector<at::Tensor>& a) {
        return ops::warp(a[0], disp.detach(), Interpolation::Nearest, pad);
      },
      {image});
  EXPECT_LT(err, 1e-6);
  const at::Tensor out = ops::warp(image, disp, Interpolation::Nearest, pad);
  const auto g = torch::autograd::grad({out.sum()}, {disp});
  EXPECT_EQ(g[0].abs().max().item<double>(), 0.0);
}

INSTANTIATE_TEST_SUITE_P(Padding, WarpGradient, ::testing::Values(Padding::Zeros, Padding::Border),
                         [](const auto& info) { return std::string(name(info.param)); });

TEST(WarpGradient, OnlyTheRequestedGradients) {
  // The registered backward computes what its output mask asks for, and nothing else:
  // the displacement alone (the usual registration case), the image alone, both.
  const at::Tensor image = at::randn({1, 1, 4, 5, 6}, at::kDouble);
  const at::Tensor disp = at::rand({1, 3, 4, 5, 6}, at::kDouble);
  const at::Tensor grad = at::randn({1, 1, 4, 5, 6}, at::kDouble);
  static auto op = c10::Dispatcher::singleton()
                       .findSchemaOrThrow("autoreg::_warp_backward", "")
                       .typed<std::tuple<at::Tensor, at::Tensor>(
                           const at::Tensor&, const at::Tensor&, const at::Tensor&,
                           c10::string_view, c10::string_view, std::array<bool, 2>)>();
  const auto [gi_both, gd_both] = op.call(grad, image, disp, "linear", "zeros", {true, true});
  const auto [gi_d, gd_d] = op.call(grad, image, disp, "linear", "zeros", {false, true});
  EXPECT_FALSE(gi_d.defined());
  ASSERT_TRUE(gd_d.defined());
  EXPECT_TRUE(at::allclose(gd_d, gd_both, 0, 0));
  const auto [gi_i, gd_i] = op.call(grad, image, disp, "linear", "zeros", {true, false});
  ASSERT_TRUE(gi_i.defined());
  EXPECT_FALSE(gd_i.defined());
  EXPECT_TRUE(at::allclose(gi_i, gi_both, 0, 0));
  // Through autograd: a constant image gets no gradient.
  const at::Tensor d = disp.clone().requires_grad_();
  ops::warp(image, d).sum().backward();
  EXPECT_TRUE(d.grad().defined());
}

TEST(ComposeGradient, MatchesFiniteDifferences) {
  at::manual_seed(12);
  const at::Tensor u = (at::rand({1, 3, 5, 6, 7}, at::kDouble) * 2 - 1) * 2;
  const at::Tensor v = (at::rand({1, 3, 5, 6, 7}, at::kDouble) * 2 - 1) * 2;
  const double err = max_gradient_error(
      [](const std::vector<at::Tensor>& a) { return ops::compose(a[0], a[1]); }, {u, v});
  EXPECT_LT(err, 1e-6);
}

TEST(IntegrateGradient, MatchesFiniteDifferences) {
  at::manual_seed(13);
  const at::Tensor v = smooth_field(1, 5, 6, 7, 2.0, at::kDouble, 3);
  const double err = max_gradient_error(
      [](const std::vector<at::Tensor>& a) { return ops::integrate(a[0], 3); }, {v});
  EXPECT_LT(err, 1e-6);
}

TEST(JacobianGradient, MatchesFiniteDifferences) {
  at::manual_seed(14);
  const at::Tensor u = smooth_field(1, 4, 5, 6, 1.0, at::kDouble, 3);
  const double err = max_gradient_error(
      [](const std::vector<at::Tensor>& a) { return ops::jacobian_determinant(a[0]); }, {u});
  EXPECT_LT(err, 1e-6);
}

}  // namespace
}  // namespace autoreg::test

namespace autoreg::test {
namespace {

using ops::Interpolation;
using ops::Padding;

// Volumes large enough to be split over threads: the image gradient's per-thread
// scatter buffers, and agreement with grid_sample's gradients.
TEST(WarpGradient, ThreadedMatchesGridSampleAndIsDeterministic) {
  at::manual_seed(15);
  const at::Tensor image = at::randn({2, 3, 24, 28, 32});
  const at::Tensor disp = smooth_field(2, 24, 28, 32, 4.0);
  const at::Tensor gout = at::randn({2, 3, 24, 28, 32});
  const int threads = at::get_num_threads();
  at::set_num_threads(2);
  auto grads = [&](bool reference) {
    const at::Tensor i = image.clone().requires_grad_(), d = disp.clone().requires_grad_();
    const at::Tensor out = reference ? grid_sample_warp(i, d, Interpolation::Linear, Padding::Zeros)
                                     : ops::warp(i, d, Interpolation::Linear, Padding::Zeros);
    return torch::autograd::grad({out}, {i, d}, {gout});
  };
  const auto ours = grads(false), again = grads(false), theirs = grads(true);
  at::set_num_threads(threads);
  EXPECT_LT(relative_error(ours[0], theirs[0]), 1e-5);
  EXPECT_LT(relative_error(ours[1], theirs[1]), 1e-5);
  EXPECT_TRUE(at::equal(ours[0], again[0]));
  EXPECT_TRUE(at::equal(ours[1], again[1]));
}

}  // namespace
}  // namespace autoreg::test
