#include "autoreg/registration/instance.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <torch/optim/adam.h>

#include "autoreg/ops.h"

namespace autoreg::registration {
namespace {

// Average pooling by `factor` (a no-op for 1): the image pyramid.
at::Tensor downsample(const at::Tensor& image, int64_t factor) {
  if (factor == 1) return image;
  return at::avg_pool3d(image, {factor, factor, factor}, {factor, factor, factor}, {0, 0, 0},
                        /*ceil_mode=*/true, /*count_include_pad=*/false);
}

// A displacement (voxels of its grid) resampled onto a grid of `size`, rescaled to the
// new voxels (a field of length 1 on a grid twice as fine is 2 voxels long).
at::Tensor resize_field(const at::Tensor& u, at::IntArrayRef size) {
  if (u.sizes().slice(2) == size) return u;
  at::Tensor r = at::upsample_trilinear3d(u, size, /*align_corners=*/true);
  std::vector<at::Tensor> channels;
  for (int64_t c = 0; c < 3; ++c) {
    const double scale = double(size[c] - 1) / double(std::max<int64_t>(1, u.size(2 + c) - 1));
    channels.push_back(r.narrow(1, c, 1) * scale);
  }
  return at::cat(channels, 1);
}

at::Tensor smoothness(const at::Tensor& v) {
  at::Tensor sum = at::zeros({}, v.options());
  for (int64_t d = 2; d < 5; ++d) {
    const int64_t n = v.size(d);
    if (n < 2) continue;
    sum = sum + (v.narrow(d, 1, n - 1) - v.narrow(d, 0, n - 1)).pow(2).mean();
  }
  return sum;
}

}  // namespace

at::Tensor local_ncc(const at::Tensor& a, const at::Tensor& b, int64_t window) {
  const int64_t pad = window / 2;
  // The box mean as three 1-D means (3·w instead of w³ operations per voxel). With
  // count_include_pad off each 1-D mean divides by its clipped length, and the product
  // of clipped lengths is the clipped box's size, so this equals the 3-D clipped mean.
  auto mean = [&](at::Tensor t) {
    t = at::avg_pool3d(t, {window, 1, 1}, {1, 1, 1}, {pad, 0, 0}, false, false);
    t = at::avg_pool3d(t, {1, window, 1}, {1, 1, 1}, {0, pad, 0}, false, false);
    return at::avg_pool3d(t, {1, 1, window}, {1, 1, 1}, {0, 0, pad}, false, false);
  };
  const at::Tensor ma = mean(a), mb = mean(b);
  const at::Tensor cov = mean(a * b) - ma * mb;
  const at::Tensor va = (mean(a * a) - ma * ma).clamp_min(0);
  const at::Tensor vb = (mean(b * b) - mb * mb).clamp_min(0);
  return (cov * cov / (va * vb + 1e-5)).mean();
}

at::Tensor fit_displacement(const at::Tensor& fixed, const at::Tensor& moving,
                            const InstanceOptions& o) {
  TORCH_CHECK(fixed.dim() == 5 && fixed.size(0) == 1 && fixed.size(1) == 1 &&
                  fixed.sizes() == moving.sizes(),
              "fit_displacement: fixed and moving must be 1×1×D×H×W of one size, got ",
              fixed.sizes(), " and ", moving.sizes());
  TORCH_CHECK(o.similarity == "ncc" || o.similarity == "mse",
              "fit_displacement: similarity must be 'ncc' or 'mse', got '", o.similarity, "'");
  TORCH_CHECK(o.iterations.size() == 2, "fit_displacement: iterations needs 2 levels (1/4, 1/2)");
  at::manual_seed(o.seed);
  const at::Tensor f = fixed.to(at::kFloat), m = moving.to(at::kFloat);
  std::vector<int64_t> half;
  for (int64_t d = 2; d < 5; ++d) half.push_back((f.size(d) + 1) / 2);
  at::Tensor velocity = at::zeros({1, 3, half[0], half[1], half[2]}, f.options()).requires_grad_();
  torch::optim::Adam adam({velocity}, torch::optim::AdamOptions(o.learning_rate));
  const int64_t factors[2] = {4, 2};
  const int64_t windows[2] = {5, 7};
  for (int level = 0; level < 2; ++level) {
    const at::Tensor fl = downsample(f, factors[level]), ml = downsample(m, factors[level]);
    for (int64_t it = 0; it < o.iterations[level]; ++it) {
      adam.zero_grad();
      const at::Tensor v = resize_field(velocity, fl.sizes().slice(2));
      const at::Tensor u = ops::integrate(v, o.integration_steps);
      const at::Tensor warped = ops::warp(ml, u, ops::Interpolation::Linear, ops::Padding::Border);
      const at::Tensor similarity = o.similarity == "ncc" ? 1 - local_ncc(fl, warped, windows[level])
                                                          : (fl - warped).pow(2).mean();
      const at::Tensor loss = similarity + o.regularization * smoothness(velocity);
      loss.backward();
      adam.step();
      if (o.progress) o.progress(level, it, loss.item<double>());
    }
  }
  c10::AutoGradMode no_grad(false);
  const at::Tensor u_half = ops::integrate(velocity.detach(), o.integration_steps);
  return resize_field(u_half, f.sizes().slice(2));
}

}  // namespace autoreg::registration
