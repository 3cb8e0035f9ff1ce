// The affine stage's hand-written mutual information (registration/classical/src/
// mutual_information.h) against the same loss written with autograd: the same value and
// the same gradient in the moving intensities, with points left out and values clamped.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <torch/csrc/autograd/autograd.h>

#include "mutual_information.h"

namespace autoreg::test {
namespace {

// The definition: a 32-bin joint histogram with Gaussian soft binning of one bin's width.
at::Tensor reference(const at::Tensor& fixed, const at::Tensor& moving, const at::Tensor& inside) {
  const at::Tensor centres = (at::arange(32, at::kDouble) + 0.5) / 32.0;
  const auto soft = [&](const at::Tensor& v) {
    const at::Tensor w = at::exp(-(v.clamp(0, 1).unsqueeze(1) - centres).pow(2) / (2.0 / (32.0 * 32.0)));
    return w / (w.sum(1, true) + 1e-12);
  };
  at::Tensor joint = (soft(fixed) * inside.unsqueeze(1)).t().matmul(soft(moving));
  joint = joint / (joint.sum() + 1e-12);
  const at::Tensor pf = joint.sum(1, true), pm = joint.sum(0, true);
  return (joint * (at::log(joint + 1e-12) - at::log(pf.matmul(pm) + 1e-12))).sum();
}

TEST(MutualInformation, MatchesAutogradInValueAndGradient) {
  at::manual_seed(8);
  const int64_t n = 3000;
  const at::Tensor fixed = at::rand({n}, at::kDouble);
  // Related to the fixed values (an inverted contrast with noise), a few out of [0, 1].
  const at::Tensor moving = (1 - fixed + 0.1 * at::randn({n}, at::kDouble)).clamp(-0.05, 1.05);
  const at::Tensor inside = (at::rand({n}, at::kDouble) > 0.1).to(at::kDouble);

  const at::Tensor m_ref = moving.clone().requires_grad_();
  const at::Tensor expected = reference(fixed, m_ref, inside);
  const at::Tensor expected_grad = torch::autograd::grad({expected}, {m_ref})[0];

  const at::Tensor weights = registration::detail::parzen_weights(fixed.to(at::kFloat)) * inside.to(at::kFloat).unsqueeze(1);
  const at::Tensor m = moving.to(at::kFloat).requires_grad_();
  const at::Tensor value = registration::detail::mutual_information(weights, m);
  const at::Tensor grad = torch::autograd::grad({value}, {m})[0];

  EXPECT_GT(expected.item<double>(), 0.3);  // the two are related
  EXPECT_NEAR(value.item<double>(), expected.item<double>(), 1e-4);
  const double scale = expected_grad.abs().max().item<double>();
  EXPECT_LT((grad.to(at::kDouble) - expected_grad).abs().max().item<double>(), 1e-3 * scale);
  EXPECT_EQ(grad.masked_select(moving.gt(1) | moving.lt(0)).abs().sum().item<double>(), 0.0);  // clamped
}

}  // namespace
}  // namespace autoreg::test
