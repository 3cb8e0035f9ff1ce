// The affine stage's fused loss and gradient (registration/classical/src/affine_kernel.h) against
// the same loss through grid_sampler (zero padding) and autograd: NCC and MSE, with a
// sample of points and all of them, with points that leave the moving volume.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include "affine_kernel.h"

namespace autoreg::test {
namespace {

namespace detail = autoreg::registration::detail;

struct Scene {
  at::Tensor moving = at::avg_pool3d(at::rand({1, 1, 14, 12, 10}), 3, 1, 1).contiguous();  // D×H×W, smooth-ish
  at::Tensor points = (at::rand({500, 3}) * 2 - 1) * at::tensor({7.0f, 8.0f, 9.0f});  // centred world points
  at::Tensor fixed = at::rand({500});
  // world → index: spacing 1.1, 0.9, 1.2 along i, j, k, a little rotation, centre at index centre.
  at::Tensor to_index = at::tensor({0.90, 0.05, 0.0, 4.5, -0.04, 1.10, 0.02, 5.5, 0.01, -0.03, 0.85, 6.5},
                                   at::kDouble).view({3, 4});
};

// The kernel's view of the scene (its tensors are contiguous and outlive it).
detail::AffineSamples samples_of(const Scene& s) {
  detail::AffineSamples k;
  k.points = s.points.data_ptr<float>();
  k.fixed = s.fixed.data_ptr<float>();
  k.count = s.points.size(0);
  k.moving = s.moving.data_ptr<float>();
  k.size = {s.moving.size(4), s.moving.size(3), s.moving.size(2)};
  for (int i = 0; i < 12; ++i) k.to_index[i] = s.to_index.flatten()[i].item<double>();
  return k;
}

// The reference: torch ops and autograd, as AffineFit::run computes its loss.
std::tuple<double, at::Tensor, at::Tensor> reference(const Scene& s, const at::Tensor& m0, const at::Tensor& t0,
                                                     const at::Tensor& index, bool ncc) {
  c10::AutoGradMode grad(true);
  at::Tensor m = m0.clone().requires_grad_(), t = t0.clone().requires_grad_();
  const at::Tensor x = index.defined() ? s.points.to(at::kDouble).index_select(0, index) : s.points.to(at::kDouble);
  const at::Tensor fixed = index.defined() ? s.fixed.to(at::kDouble).index_select(0, index) : s.fixed.to(at::kDouble);
  const at::Tensor y = x.matmul(m.t()) + t;
  const at::Tensor idx = y.matmul(s.to_index.slice(1, 0, 3).t()) + s.to_index.select(1, 3);  // i, j, k
  const at::Tensor n = at::tensor({10.0, 12.0, 14.0}, at::kDouble);
  const at::Tensor grid = idx * (2 / (n - 1)) - 1;
  const at::Tensor inside = (grid.detach().abs() <= 1).all(1).to(at::kDouble);
  const at::Tensor moved = at::grid_sampler(s.moving.to(at::kDouble), grid.view({1, 1, 1, -1, 3}), 0, 0, true).flatten();
  const at::Tensor count = inside.sum();
  at::Tensor loss;
  if (ncc) {
    const at::Tensor mf = (fixed * inside).sum() / count, mm = (moved * inside).sum() / count;
    const at::Tensor a = (fixed - mf) * inside, b = (moved - mm) * inside;
    loss = 1 - (a * b).sum() / ((a * a).sum() * (b * b).sum() + 1e-12).sqrt();
  } else {
    loss = ((fixed - moved).pow(2) * inside).sum() / count;
  }
  loss.backward();
  return {loss.item<double>(), m.grad(), t.grad()};
}

void compare(bool ncc, bool sampled) {
  at::manual_seed(ncc * 2 + sampled);
  const Scene s;
  const at::Tensor m = at::eye(3, at::kDouble) + at::randn({3, 3}, at::kDouble) * 0.05;
  const at::Tensor t = at::randn({3}, at::kDouble);
  const at::Tensor index = sampled ? at::randint(500, {300}, at::kLong) : at::Tensor();
  const auto [want, want_m, want_t] = reference(s, m, t, index, ncc);
  const detail::AffineSamples k = samples_of(s);
  std::array<double, 9> mm{};
  std::array<double, 3> tt{};
  for (int i = 0; i < 9; ++i) mm[i] = m.flatten()[i].item<double>();
  for (int i = 0; i < 3; ++i) tt[i] = t[i].item<double>();
  std::array<double, 9> gm{};
  std::array<double, 3> gt{};
  const double got = detail::affine_loss(k, mm, tt, sampled ? index.data_ptr<int64_t>() : nullptr, 300, ncc, &gm, &gt);
  EXPECT_NEAR(got, want, 1e-5 * (1 + std::abs(want)));
  for (int i = 0; i < 9; ++i) EXPECT_NEAR(gm[i], want_m.flatten()[i].item<double>(), 1e-4 * (1 + want_m.abs().max().item<double>())) << i;
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(gt[i], want_t[i].item<double>(), 1e-4 * (1 + want_t.abs().max().item<double>())) << i;
}

TEST(AffineKernel, NccLossAndGradientMatchAutograd) {
  compare(true, false);
  compare(true, true);
}

TEST(AffineKernel, MseLossAndGradientMatchAutograd) {
  compare(false, false);
  compare(false, true);
}

TEST(AffineKernel, NoOverlapIsTheWorstLossWithoutGradient) {
  const Scene s;
  const detail::AffineSamples k = samples_of(s);
  std::array<double, 9> m{1, 0, 0, 0, 1, 0, 0, 0, 1}, gm{};
  std::array<double, 3> t{1000, 0, 0}, gt{};
  EXPECT_EQ(detail::affine_loss(k, m, t, nullptr, 0, true, &gm, &gt), 1.0);
  for (double g : gm) EXPECT_EQ(g, 0.0);
  for (double g : gt) EXPECT_EQ(g, 0.0);
}

}  // namespace
}  // namespace autoreg::test
