// The running-sum box mean (registration/losses/src/box_filter.h) against clipped means from
// cumulative sums, axis by axis: the same values and, through autograd, the same gradients, for
// windows up to the volume's depth (clipped on both sides), on several volumes at once.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <vector>
#include <torch/csrc/autograd/autograd.h>

#include "box_filter.h"

namespace autoreg::test {
namespace {

// The clipped mean along one dimension from a cumulative sum (any window, also one
// longer than the line), differentiable by autograd.
at::Tensor clipped_mean(const at::Tensor& t, int64_t dim, int64_t pad) {
  const int64_t len = t.size(dim);
  std::vector<int64_t> lo, hi;
  std::vector<double> n;
  for (int64_t i = 0; i < len; ++i) {
    lo.push_back(std::max<int64_t>(0, i - pad));
    hi.push_back(std::min(len, i + pad + 1));
    n.push_back(double(hi.back() - lo.back()));
  }
  std::vector<int64_t> shape(5, 1);
  shape[size_t(dim)] = len;
  const at::Tensor c = at::cat({at::zeros_like(t.narrow(dim, 0, 1)), at::cumsum(t, dim)}, dim);
  const at::Tensor sum = c.index_select(dim, at::tensor(hi)) - c.index_select(dim, at::tensor(lo));
  return sum / at::tensor(n).view(shape).to(t.scalar_type());
}

at::Tensor reference(const at::Tensor& t, int64_t window) {
  const int64_t pad = window / 2;
  return clipped_mean(clipped_mean(clipped_mean(t.to(at::kDouble), 2, pad), 3, pad), 4, pad).to(at::kFloat);
}

TEST(BoxFilter, MeansAndGradientsMatchClippedMeans) {
  at::manual_seed(8);
  c10::AutoGradMode grad(true);
  for (const int64_t window : {1, 3, 5, 7, 9, 15}) {
    SCOPED_TRACE(window);
    // 7 voxels deep: window 7 is clipped on one side or the other everywhere along D;
    // 5 wide: windows 9 and 15 reach past both ends of every line along W.
    const at::Tensor x = at::rand({2, 3, 7, 11, 5}, at::kFloat).requires_grad_();
    const at::Tensor g = at::randn({2, 3, 7, 11, 5});
    const at::Tensor ours = autoreg::registration::detail::fast_box_mean(x, window);
    const at::Tensor want = reference(x, window);
    EXPECT_TRUE(at::allclose(ours, want, 1e-5, 1e-6)) << (ours - want).abs().max().item<float>();
    const at::Tensor grad_ours = torch::autograd::grad({(ours * g).sum()}, {x})[0];
    const at::Tensor grad_want = torch::autograd::grad({(want * g).sum()}, {x})[0];
    EXPECT_TRUE(at::allclose(grad_ours, grad_want, 1e-5, 1e-5)) << (grad_ours - grad_want).abs().max().item<float>();
  }
}

// A box of its own length along each axis (a thick-slice window: few voxels across the
// slices, more in-plane), the same against the three clipped means with their pads.
TEST(BoxFilter, PerAxisWindowsMatchClippedMeans) {
  at::manual_seed(9);
  c10::AutoGradMode grad(true);
  using W = autoreg::registration::detail::Window;
  for (const W& window : {W{1, 3, 5}, W{3, 7, 1}, W{9, 1, 3}}) {
    SCOPED_TRACE(std::to_string(window[0]) + "x" + std::to_string(window[1]) + "x" + std::to_string(window[2]));
    const at::Tensor x = at::rand({1, 2, 7, 11, 5}, at::kFloat).requires_grad_();
    const at::Tensor g = at::randn({1, 2, 7, 11, 5});
    const at::Tensor ours = autoreg::registration::detail::fast_box_mean(x, window);
    const at::Tensor want =
        clipped_mean(clipped_mean(clipped_mean(x.to(at::kDouble), 2, window[0] / 2), 3, window[1] / 2), 4, window[2] / 2)
            .to(at::kFloat);
    EXPECT_TRUE(at::allclose(ours, want, 1e-5, 1e-6)) << (ours - want).abs().max().item<float>();
    const at::Tensor grad_ours = torch::autograd::grad({(ours * g).sum()}, {x})[0];
    const at::Tensor grad_want = torch::autograd::grad({(want * g).sum()}, {x})[0];
    EXPECT_TRUE(at::allclose(grad_ours, grad_want, 1e-5, 1e-5)) << (grad_ours - grad_want).abs().max().item<float>();
  }
}

}  // namespace
}  // namespace autoreg::test
