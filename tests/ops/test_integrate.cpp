// compose, integrate (scaling and squaring) and jacobian_determinant.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "helpers.h"

namespace autoreg::test {
namespace {

using ops::Interpolation;
using ops::Padding;

TEST(Compose, IsVPlusUSampledAtXPlusV) {
  at::manual_seed(20);
  for (auto dtype : {at::kFloat, at::kDouble}) {
    const at::Tensor u = smooth_field(2, 7, 8, 9, 3.0, dtype);
    const at::Tensor v = smooth_field(2, 7, 8, 9, 3.0, dtype);
    const at::Tensor want = v + ops::warp(u, v, Interpolation::Linear, Padding::Border);
    EXPECT_LT(relative_error(ops::compose(u, v), want), dtype == at::kFloat ? 1e-6 : 1e-14);
  }
}

TEST(Compose, ConstantShiftsAdd) {
  at::Tensor a = at::empty({1, 3, 5, 6, 7}, at::kDouble), b = at::empty_like(a);
  const double sa[3] = {0.5, -1.25, 2.0}, sb[3] = {-3.0, 0.75, 1.5};
  for (int c = 0; c < 3; ++c) {
    a.select(1, c).fill_(sa[c]);
    b.select(1, c).fill_(sb[c]);
  }
  EXPECT_TRUE(at::allclose(ops::compose(a, b), a + b, 0, 1e-15));
}

TEST(Compose, EqualsSequentialWarps) {
  // warp(warp(m, u), v)(x) = m(x + v + u(x + v)) = warp(m, compose(u, v))(x). With an
  // image linear in position, trilinear interpolation is exact, so away from the
  // borders the two agree to rounding, while the naive sum u + v does not.
  at::manual_seed(21);
  const int64_t S = 20;
  const at::Tensor r = at::arange(S, at::kDouble);
  const at::Tensor m = (0.7 * r.view({S, 1, 1}) - 0.4 * r.view({1, S, 1}) + 0.9 * r.view({1, 1, S}))
                           .view({1, 1, S, S, S});
  const at::Tensor u = smooth_field(1, S, S, S, 1.5, at::kDouble);
  const at::Tensor v = smooth_field(1, S, S, S, 1.5, at::kDouble);
  const auto warp = [](const at::Tensor& i, const at::Tensor& d) {
    return ops::warp(i, d, Interpolation::Linear, Padding::Border);
  };
  const auto inner = [&](const at::Tensor& t) {
    return t.narrow(2, 4, S - 8).narrow(3, 4, S - 8).narrow(4, 4, S - 8);
  };
  const at::Tensor twice = inner(warp(warp(m, u), v));
  EXPECT_LT(relative_error(inner(warp(m, ops::compose(u, v))), twice), 1e-12);
  EXPECT_GT(relative_error(inner(warp(m, u + v)), twice), 1e-3);
}

TEST(Integrate, ZeroStepsReturnsVelocityAndConstantFieldsAreExact) {
  const at::Tensor v = smooth_field(1, 5, 6, 7, 2.0, at::kDouble);
  EXPECT_TRUE(at::equal(ops::integrate(v, 0), v));
  // A translation is its own exponential; border padding keeps it constant.
  at::Tensor t = at::empty({1, 3, 5, 6, 7}, at::kDouble);
  t.select(1, 0).fill_(1.5);
  t.select(1, 1).fill_(-0.5);
  t.select(1, 2).fill_(3.0);
  EXPECT_TRUE(at::allclose(ops::integrate(t, 7), t, 0, 1e-12));
}

TEST(Integrate, ForwardThenBackwardIsNearlyIdentity) {
  // exp(v)∘exp(-v) = id: composing the two integrated fields gives ~zero displacement.
  at::manual_seed(22);
  const int64_t S = 32;
  const at::Tensor v = smooth_field(1, S, S, S, 4.0, at::kFloat);
  const at::Tensor phi = ops::integrate(v, 7);
  const at::Tensor psi = ops::integrate(-v, 7);
  const at::Tensor residual = ops::compose(phi, psi);
  const at::Tensor inner = residual.narrow(2, 6, S - 12).narrow(3, 6, S - 12).narrow(4, 6, S - 12);
  const double peak = phi.abs().max().item<double>();
  ASSERT_GT(peak, 1.0);  // a real deformation, not a trivially small one
  EXPECT_LT(inner.abs().max().item<double>(), 0.05 * peak);
  EXPECT_LT(inner.abs().mean().item<double>(), 0.005 * peak);
}

TEST(JacobianDeterminant, IdentityAndLinearFields) {
  EXPECT_TRUE(at::equal(ops::jacobian_determinant(at::zeros({2, 3, 4, 5, 6}, at::kDouble)),
                        at::ones({2, 1, 4, 5, 6}, at::kDouble)));
  // u(x) = A x: finite differences of a linear field are exact, so det(I + A) everywhere.
  const double A[3][3] = {{0.1, 0.2, -0.05}, {0.0, -0.3, 0.1}, {0.15, 0.05, 0.2}};
  const int64_t size[3] = {4, 5, 6};
  at::Tensor u = at::zeros({1, 3, 4, 5, 6}, at::kDouble);
  for (int c = 0; c < 3; ++c)
    for (int k = 0; k < 3; ++k) {
      std::vector<int64_t> shape = {1, 1, 1};
      shape[k] = size[k];
      u.select(1, c).add_(at::arange(size[k], at::kDouble).view(shape).unsqueeze(0) * A[c][k]);
    }
  const double det = (1 + A[0][0]) * ((1 + A[1][1]) * (1 + A[2][2]) - A[1][2] * A[2][1]) -
                     A[0][1] * (A[1][0] * (1 + A[2][2]) - A[1][2] * A[2][0]) +
                     A[0][2] * (A[1][0] * A[2][1] - (1 + A[1][1]) * A[2][0]);
  EXPECT_TRUE(at::allclose(ops::jacobian_determinant(u), at::full({1, 1, 4, 5, 6}, det, at::kDouble),
                           0, 1e-12));
}

TEST(JacobianDeterminant, PositiveForSmoothIntegratedField) {
  at::manual_seed(23);
  const at::Tensor v = smooth_field(1, 32, 32, 32, 6.0, at::kFloat);
  const at::Tensor phi = ops::integrate(v, 7);
  const at::Tensor det = ops::jacobian_determinant(phi);
  EXPECT_EQ(det.sizes(), (std::vector<int64_t>{1, 1, 32, 32, 32}));
  EXPECT_GT(det.min().item<double>(), 0.0);
  // The velocity alone, used as a displacement, is large enough to fold: the test
  // would catch an integrate that returned it unchanged.
  EXPECT_LT(ops::jacobian_determinant(v * 3).min().item<double>(), 0.0);
}

}  // namespace
}  // namespace autoreg::test
