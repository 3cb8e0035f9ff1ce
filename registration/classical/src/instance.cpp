#include "autoreg/registration/instance.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <torch/optim/adam.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "autoreg/ops.h"
#include "autoreg/registration/regularization.h"
#include "pooling.h"
#include "autoreg/registration/similarity.h"

namespace autoreg::registration {
namespace {

using detail::downsample;
using detail::Factors;

// The finest axis (the first of equals): its voxels set Adam's step.
int finest_axis(const std::array<double, 3>& spacing) {
  int a = 0;
  for (int d = 1; d < 3; ++d) {
    if (spacing[d] > 0 && spacing[d] < spacing[a]) a = d;
  }
  return a;
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

// The grid that pooling a volume of `size` by `f` (as downsample) gives, without pooling it.
std::vector<int64_t> pooled_size(at::IntArrayRef size, const Factors& f) {
  std::vector<int64_t> n;
  for (int d = 0; d < 3; ++d) {
    const int64_t g = std::min(f[d], size[2 + d]);
    n.push_back((size[2 + d] + g - 1) / g);
  }
  return n;
}

// The local NCC's window of a level whose velocity's grid pools the images by `own` and
// whose comparison pools them by `compared` (`own` itself, a finer level's factors, or
// 1s for the full-resolution images), in voxels of the compared grid:
// - window_mm > 0: that many millimetres along each axis (odd, at least 3 voxels);
// - a level before the finest compared on a finer grid: 9 of its voxels where that grid
//   is at least 3 times finer than the level's, 7 otherwise (on the liver pairs, windows
//   of the level's 5 voxels scaled to the finer grid, 19 and 11, left 2.02 / 1.85 mm with
//   λ 0.7; 9, 9, 7 1.90 / 1.64, docs/beyond-brains.md);
// - otherwise 5 voxels of the level's grid, 7 at the finest level.
NccWindow level_window(const InstanceOptions& o, bool finest, const Factors& own, const Factors& compared) {
  NccWindow window;
  window.fill(finest ? 7 : 5);
  int64_t ratio = 1;
  for (int d = 0; d < 3; ++d) ratio = std::max(ratio, own[d] / compared[d]);
  if (!finest && ratio > 1) window.fill(ratio >= 3 ? 9 : 7);
  if (o.window_mm > 0) {
    for (int d = 0; d < 3; ++d) {
      const double voxel = o.spacing[d] * double(compared[d]);
      if (voxel > 0) window[size_t(d)] = std::max<int64_t>(3, 2 * std::llround((o.window_mm / voxel - 1) / 2) + 1);
    }
  }
  return window;
}

}  // namespace

std::vector<std::array<int64_t, 3>> pyramid_factors(size_t levels, const std::array<double, 3>& spacing) {
  const double finest = std::min({spacing[0], spacing[1], spacing[2]});
  const double coarsest = std::max({spacing[0], spacing[1], spacing[2]});
  // Thick slices: voxels as near cubes as the level allows, of the volume an even shrink
  // would give them (the geometric mean spacing times the shrink).
  const bool thick = finest > 0 && coarsest >= 1.5 * finest;
  const double mean_spacing = thick ? std::cbrt(spacing[0] * spacing[1] * spacing[2]) : 0;
  std::vector<Factors> plan;
  for (size_t l = 0; l <= levels; ++l) {
    // The even shrink: 2^(L−l) for the levels, 2 for the half-resolution grid.
    const int64_t base = l < levels ? int64_t(1) << (levels - l) : 2;
    Factors f{base, base, base};
    for (int d = 0; d < 3 && thick; ++d) {
      f[d] = std::max<int64_t>(1, std::llround(double(base) * mean_spacing / spacing[d]));
    }
    plan.push_back(f);
  }
  return plan;
}

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
  for (const at::Tensor* mask : {&o.fixed_mask, &o.moving_mask}) {
    TORCH_CHECK(!mask->defined() || mask->sizes() == fixed.sizes(), "fit_displacement: a mask must be ",
                fixed.sizes(), " like the images, got ", mask->sizes());
  }
  TORCH_CHECK(!o.iterations.empty() && o.iterations.size() <= 6, "fit_displacement: 1 to 6 levels, got ",
              o.iterations.size());
  const at::Tensor& start = o.initial_velocity;
  TORCH_CHECK(!start.defined() || (start.dim() == 5 && start.size(0) == 1 && start.size(1) == 3),
              "fit_displacement: the initial velocity must be 1×3×d×h×w, got ", start.sizes());
  at::manual_seed(o.seed);
  const at::Tensor f = fixed.to(at::kFloat), m = moving.to(at::kFloat);
  const size_t levels = o.iterations.size();
  const std::vector<Factors> plan = pyramid_factors(levels, o.spacing);
  const std::vector<int64_t> half = pooled_size(f.sizes(), plan[levels]);
  const int a = finest_axis(o.spacing);

  // The velocity lives on each level's grid: 1/4 resolution first (a step there costs a
  // fraction of one at 1/2), then upsampled to 1/2 for the second level. Adam's step is
  // `learning_rate` half-resolution voxels, the same physical length on both levels.
  at::Tensor velocity;
  for (size_t level = 0; level < levels; ++level) {
    // Leading levels without steps (a refinement) are skipped: the first with steps starts
    // from the initial velocity, or zero.
    if (!velocity.defined() && o.iterations[level] == 0 && level + 1 < levels) continue;
    // What the level compares, and on which grid its velocity lives:
    // - with full_resolution, the finest level compares the images themselves, through
    //   the half-resolution velocity upsampled at each step;
    // - with compare_finer, a level before the finest compares the images pooled as the
    //   level compare_finer levels finer (at most the half-resolution grid), through its
    //   own velocity upsampled at each step;
    // - otherwise, the images pooled to the level's grid, where its velocity lives.
    const bool finest = level + 1 == levels;
    const bool full = o.full_resolution && finest;
    const Factors own = plan[level];
    const Factors compared =
        full ? Factors{1, 1, 1} : finest ? own : plan[std::min(level + size_t(std::max(0, o.compare_finer)), levels)];
    const bool upsampled = compared != own;  // the velocity is upsampled to the compared grid at each step
    const auto at_level = [&](const at::Tensor& t) { return downsample(t, compared); };
    const at::Tensor fl = at_level(f), ml = at_level(m);
    const std::vector<int64_t> grid = pooled_size(f.sizes(), own);
    const NccWindow window = level_window(o, finest, own, compared);
    // MIND: the descriptors of both images computed once a level, the moving ones warped
    // at each step (as deeds and ConvexAdam do) rather than recomputed from the warped
    // image, compared by MSE. The T1/T2 pair's deformable stage 18.4 s -> 8.3 s; on the
    // OASIS validation pairs 06<->07 with --similarity mind, Dice 0.462/0.475 against
    // 0.472/0.488 recomputing (docs/performance.md).
    const bool descriptors = o.similarity == Similarity::Mind;
    const at::Tensor compared_fixed = descriptors ? mind_ssc(fl) : fl;
    const at::Tensor compared_moving = descriptors ? mind_ssc(ml) : ml;
    const at::Tensor fixed_mask = o.fixed_mask.defined() ? at_level(o.fixed_mask.to(f.options())) : at::Tensor();
    const at::Tensor moving_mask = o.moving_mask.defined() ? at_level(o.moving_mask.to(f.options())) : at::Tensor();
    {
      c10::AutoGradMode no_grad(false);
      velocity = velocity.defined()             ? resize_field(velocity, grid)
                 : o.initial_velocity.defined() ? resize_field(o.initial_velocity.to(f.options()), grid)
                                                : at::zeros({1, 3, grid[0], grid[1], grid[2]}, f.options());
    }
    velocity.requires_grad_();
    // The level's voxel size (mm, or unknown): what the smoothness's Jacobian is taken in.
    std::array<double, 3> level_spacing{};
    for (int d = 0; d < 3; ++d) level_spacing[d] = o.spacing[d] * double(own[d]);
    const double scale = double(grid[size_t(a)]) / double(half[a]);  // level voxels per half-resolution voxel
    torch::optim::Adam adam({velocity}, torch::optim::AdamOptions(o.learning_rate * scale));
    for (int64_t it = 0; it < o.iterations[level]; ++it) {
      adam.zero_grad();
      at::Tensor u = ops::integrate(velocity, o.integration_steps);
      if (upsampled) u = resize_field(u, fl.sizes().slice(2));
      at::Tensor weight;  // the masks' voxels that count (not optimised: no gradient)
      if (fixed_mask.defined() || moving_mask.defined()) {
        c10::AutoGradMode no_grad(false);
        weight = fixed_mask.defined() ? fixed_mask : at::ones_like(fl);
        if (moving_mask.defined()) {
          weight = weight * ops::warp(moving_mask, u.detach(), ops::Interpolation::Linear, ops::Padding::Border);
        }
      }
      // Squared differences (of descriptors or intensities) in one pass with their gradient.
      const at::Tensor similarity =
          o.similarity != Similarity::Ncc  // MSE, or MIND's descriptors by MSE
              ? ops::warped_mse(compared_moving, compared_fixed, u, ops::Padding::Border, weight)
              : similarity_loss(Similarity::Ncc, compared_fixed,
                                ops::warp(compared_moving, u, ops::Interpolation::Linear, ops::Padding::Border),
                                window, weight);
      const at::Tensor loss = similarity + o.regularization * smoothness(velocity, o.regularizer, level_spacing);
      loss.backward();
      adam.step();
      if (o.progress) o.progress(int(level), it, loss.item<double>());
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
