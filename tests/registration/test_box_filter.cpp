// The running-sum box mean (registration/src/box_filter.h) against avg_pool3d's clipped
// means pass by pass: the same values and, through autograd, the same gradients, for
// windows up to the volume's depth (clipped on both sides), on several volumes at once.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/autograd.h>

#include "box_filter.h"

namespace autoreg::test {
namespace {

at::Tensor reference(const at::Tensor& t, int64_t window) {
  const int64_t pad = window / 2;
  at::Tensor x = at::avg_pool3d(t, {window, 1, 1}, {1, 1, 1}, {pad, 0, 0}, false, false);
  x = at::avg_pool3d(x, {1, window, 1}, {1, 1, 1}, {0, pad, 0}, false, false);
  return at::avg_pool3d(x, {1, 1, window}, {1, 1, 1}, {0, 0, pad}, false, false);
}

TEST(BoxFilter, MeansAndGradientsMatchAvgPool) {
  at::manual_seed(8);
  c10::AutoGradMode grad(true);
  for (const int64_t window : {1, 3, 5, 7}) {
    SCOPED_TRACE(window);
    // 7 voxels deep: window 7 is clipped on one side or the other everywhere along D.
    const at::Tensor x = at::rand({2, 3, 7, 11, 13}, at::kFloat).requires_grad_();
    const at::Tensor g = at::randn({2, 3, 7, 11, 13});
    const at::Tensor ours = autoreg::registration::detail::fast_box_mean(x, window);
    const at::Tensor want = reference(x, window);
    EXPECT_TRUE(at::allclose(ours, want, 1e-5, 1e-6)) << (ours - want).abs().max().item<float>();
    const at::Tensor grad_ours = torch::autograd::grad({(ours * g).sum()}, {x})[0];
    const at::Tensor grad_want = torch::autograd::grad({(want * g).sum()}, {x})[0];
    EXPECT_TRUE(at::allclose(grad_ours, grad_want, 1e-5, 1e-5)) << (grad_ours - grad_want).abs().max().item<float>();
  }
}

}  // namespace
}  // namespace autoreg::test
