#include "autoreg/registration/instance.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <torch/optim/adam.h>

#include "autoreg/ops.h"
#include "autoreg/registration/regularization.h"
#include "autoreg/registration/similarity.h"

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

}  // namespace

at::Tensor fit_half_displacement(const at::Tensor& fixed, const at::Tensor& moving,
                                 const InstanceOptions& o) {
  const at::Tensor velocity = fit_half_velocity(fixed, moving, o);
  c10::AutoGradMode no_grad(false);
  return ops::integrate(velocity, o.integration_steps);
}

at::Tensor fit_half_velocity(const at::Tensor& fixed, const at::Tensor& moving, const InstanceOptions& o) {
  TORCH_CHECK(fixed.dim() == 5 && fixed.size(0) == 1 && fixed.size(1) == 1 &&
                  fixed.sizes() == moving.sizes(),
              "fit_displacement: fixed and moving must be 1×1×D×H×W of one size, got ",
              fixed.sizes(), " and ", moving.sizes());
  check_similarity(o.similarity);
  TORCH_CHECK(o.iterations.size() == 2, "fit_displacement: iterations needs 2 levels (1/4, 1/2)");
  at::manual_seed(o.seed);
  const at::Tensor f = fixed.to(at::kFloat), m = moving.to(at::kFloat);
  std::vector<int64_t> half;
  for (int64_t d = 2; d < 5; ++d) half.push_back((f.size(d) + 1) / 2);
  const int64_t factors[2] = {4, 2};
  const int64_t windows[2] = {5, 7};
  // The velocity lives on each level's grid: 1/4 resolution first (a step there costs a
  // fraction of one at 1/2), then upsampled to 1/2 for the second level. Adam's step is
  // `learning_rate` half-resolution voxels, the same physical length on both levels.
  at::Tensor velocity;
  for (int level = 0; level < 2; ++level) {
    if (level == 0 && o.iterations[0] == 0) continue;  // (a refinement) start at 1/2 from zero
    const at::Tensor fl = downsample(f, factors[level]), ml = downsample(m, factors[level]);
    {
      c10::AutoGradMode no_grad(false);
      velocity = velocity.defined() ? resize_field(velocity, fl.sizes().slice(2))
                                    : at::zeros({1, 3, fl.size(2), fl.size(3), fl.size(4)}, f.options());
    }
    velocity.requires_grad_();
    const double scale = double(fl.size(2)) / double(half[0]);  // level voxels per half-resolution voxel
    torch::optim::Adam adam({velocity}, torch::optim::AdamOptions(o.learning_rate * scale));
    for (int64_t it = 0; it < o.iterations[level]; ++it) {
      adam.zero_grad();
      const at::Tensor u = ops::integrate(velocity, o.integration_steps);
      const at::Tensor warped = ops::warp(ml, u, ops::Interpolation::Linear, ops::Padding::Border);
      const at::Tensor loss = similarity_loss(o.similarity, fl, warped, windows[level]) +
                              o.regularization * gradient_l2(velocity);
      loss.backward();
      adam.step();
      if (o.progress) o.progress(level, it, loss.item<double>());
    }
    velocity = velocity.detach();
  }
  c10::AutoGradMode no_grad(false);
  return resize_field(velocity, half);
}

at::Tensor fit_displacement(const at::Tensor& fixed, const at::Tensor& moving,
                            const InstanceOptions& o) {
  const at::Tensor half = fit_half_displacement(fixed, moving, o);
  c10::AutoGradMode no_grad(false);
  return resize_field(half, fixed.sizes().slice(2));
}

}  // namespace autoreg::registration
