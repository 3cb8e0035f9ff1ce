// Instance optimisation recovers a known smooth deformation of a synthetic volume.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include "autoreg/ops.h"
#include "autoreg/registration/instance.h"

namespace autoreg::test {
namespace {

namespace reg = autoreg::registration;

TEST(FitDisplacement, RecoversAKnownSmoothDeformation) {
  at::manual_seed(2);
  const int64_t S = 32;
  // A "brain": blurred random blobs, with structure at several scales.
  const at::Tensor noise = at::rand({1, 1, 8, 8, 8});
  const at::Tensor fixed = at::upsample_trilinear3d(noise, {S, S, S}, true);
  // The truth: moving = fixed pulled back through the inverse of a smooth deformation,
  // so that moving(x + u(x)) ≈ fixed(x) for u = exp(v).
  const at::Tensor v = at::upsample_trilinear3d((at::rand({1, 3, 4, 4, 4}) * 2 - 1) * 2.0, {S, S, S}, true);
  const at::Tensor truth = ops::integrate(v, 7);
  const at::Tensor moving = ops::warp(fixed, ops::integrate(-v, 7), ops::Interpolation::Linear,
                                      ops::Padding::Border);
  reg::InstanceOptions o;
  o.iterations = {60, 60};
  o.similarity = "mse";
  o.regularization = 0.05;
  const at::Tensor u = reg::fit_displacement(fixed, moving, o);
  const auto inner = [&](const at::Tensor& t) {
    return t.narrow(2, 4, S - 8).narrow(3, 4, S - 8).narrow(4, 4, S - 8);
  };
  const double before = inner(fixed - moving).pow(2).mean().item<double>();
  const double after =
      inner(fixed - ops::warp(moving, u, ops::Interpolation::Linear, ops::Padding::Border)).pow(2).mean().item<double>();
  EXPECT_LT(after, 0.3 * before);
  // Closer to the true field than the identity is.
  const double err_identity = inner(truth).pow(2).sum(1).sqrt().mean().item<double>();
  const double err_fit = inner(u - truth).pow(2).sum(1).sqrt().mean().item<double>();
  EXPECT_LT(err_fit, 0.6 * err_identity);
  // And diffeomorphic.
  EXPECT_GT(ops::jacobian_determinant(u).min().item<double>(), 0.0);
}

}  // namespace
}  // namespace autoreg::test
