#include "autoreg/registration/affine.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "affine_fit.h"
#include "autoreg/registration/similarity.h"

namespace autoreg::registration {
namespace {

using detail::AffineFit;
using detail::Level;
using detail::world_points;

// The image block-averaged to about `spacing` mm, with its index-to-world matrix (block
// centre (f−1)/2 in the original indices).
Level pyramid_level(const at::Tensor& image, const at::Tensor& index_to_world, double spacing) {
  std::array<int64_t, 3> f{};  // along i, j, k
  at::Tensor block = at::eye(4, at::kDouble);
  for (int a = 0; a < 3; ++a) {
    const double s = index_to_world.slice(0, 0, 3).select(1, a).norm().item<double>();
    const int64_t n = image.size(4 - a);
    f[a] = std::clamp<int64_t>(std::llround(spacing / s), 1, std::max<int64_t>(1, n));
    block[a][a] = double(f[a]);
    block[a][3] = (f[a] - 1) / 2.0;
  }
  at::Tensor pooled = image;
  if (f[0] * f[1] * f[2] > 1) {
    pooled = at::avg_pool3d(image, {f[2], f[1], f[0]}, {f[2], f[1], f[0]}, {0, 0, 0},
                            /*ceil_mode=*/false, /*count_include_pad=*/false);
  }
  return {pooled.contiguous(), index_to_world.matmul(block)};
}

struct Moments {
  at::Tensor centre;      // 3, float64
  at::Tensor covariance;  // 3×3, float64
};

Moments moments(const Level& level) {
  const at::Tensor w = level.image.to(at::kDouble).cpu().flatten().clamp_min(0);
  const double mass = w.sum().item<double>();
  TORCH_CHECK(mass > 0, "affine alignment: an image has no positive intensity");
  const at::Tensor x = world_points(level.image, level.index_to_world);
  const at::Tensor centre = (x * w.unsqueeze(1)).sum(0) / mass;
  const at::Tensor xc = x - centre;
  const at::Tensor covariance = xc.t().matmul(xc * w.unsqueeze(1)) / mass;
  return {centre, covariance};
}

// The isotropic scale that equalises the volumes of two mass distributions.
double volume_scale(const Moments& fixed, const Moments& moving) {
  return std::pow(at::det(moving.covariance).item<double>() /
                      std::max(1e-12, at::det(fixed.covariance).item<double>()),
                  1.0 / 6.0);
}

// The affine y = M·(x − c_f) + c_f + t as a 4×4 matrix.
at::Tensor to_matrix(const at::Tensor& m, const at::Tensor& t, const at::Tensor& c_f) {
  at::Tensor a = at::eye(4, at::kDouble);
  a.slice(0, 0, 3).slice(1, 0, 3).copy_(m);
  a.slice(0, 0, 3).select(1, 3).copy_(c_f + t - m.matmul(c_f));
  return a;
}

std::vector<Level> pyramid(const at::Tensor& image, const at::Tensor& index_to_world,
                           const std::vector<double>& spacing) {
  std::vector<Level> levels;
  for (double s : spacing) {
    levels.push_back(pyramid_level(image.to(at::kFloat), index_to_world.cpu(), s));
  }
  return levels;
}

void check_inputs(const at::Tensor& image, const at::Tensor& index_to_world, const char* what) {
  TORCH_CHECK(image.dim() == 5 && image.size(0) == 1 && image.size(1) == 1,
              "fit_affine: ", what, " must be 1×1×D×H×W, got ", image.sizes());
  TORCH_CHECK(index_to_world.sizes() == at::IntArrayRef({4, 4}),
              "fit_affine: ", what, " index_to_world must be 4×4");
}

}  // namespace

at::Tensor moments_affine(const at::Tensor& fixed, const at::Tensor& fixed_index_to_world,
                          const at::Tensor& moving, const at::Tensor& moving_index_to_world) {
  check_inputs(fixed, fixed_index_to_world, "fixed");
  check_inputs(moving, moving_index_to_world, "moving");
  c10::AutoGradMode no_grad(false);
  const Moments mf = moments({fixed.to(at::kFloat), fixed_index_to_world.to(at::kDouble)});
  const Moments mm = moments({moving.to(at::kFloat), moving_index_to_world.to(at::kDouble)});
  return to_matrix(at::eye(3, at::kDouble) * volume_scale(mf, mm), mm.centre - mf.centre, mf.centre);
}

at::Tensor fit_affine(const at::Tensor& fixed, const at::Tensor& fixed_index_to_world,
                      const at::Tensor& moving, const at::Tensor& moving_index_to_world,
                      const AffineOptions& o, AffineReport* report) {
  check_inputs(fixed, fixed_index_to_world, "fixed");
  check_inputs(moving, moving_index_to_world, "moving");
  TORCH_CHECK(!o.level_spacing.empty() && o.level_spacing.size() == o.iterations.size(),
              "fit_affine: one iteration count per pyramid level");
  TORCH_CHECK(!o.fixed_mask.defined() || o.fixed_mask.sizes() == fixed.sizes(), "fit_affine: the fixed mask must be ",
              fixed.sizes(), " like the fixed image, got ", o.fixed_mask.sizes());
  TORCH_CHECK(!o.moving_mask.defined() || o.moving_mask.sizes() == moving.sizes(), "fit_affine: the moving mask must be ",
              moving.sizes(), " like the moving image, got ", o.moving_mask.sizes());
  const std::vector<Level> f = pyramid(fixed, fixed_index_to_world.to(at::kDouble), o.level_spacing);
  const std::vector<Level> m = pyramid(moving, moving_index_to_world.to(at::kDouble), o.level_spacing);
  const auto mask_pyramid = [&](const at::Tensor& mask, const at::Tensor& index_to_world) {
    return mask.defined() ? pyramid(mask, index_to_world.to(at::kDouble), o.level_spacing) : std::vector<Level>{};
  };
  const std::vector<Level> fm = mask_pyramid(o.fixed_mask, fixed_index_to_world);
  const std::vector<Level> mmask = mask_pyramid(o.moving_mask, moving_index_to_world);

  // Moments at the coarsest level, of the masked images when masked.
  c10::AutoGradMode no_grad(false);
  const auto masked = [](const Level& image, const std::vector<Level>& mask) {
    return mask.empty() ? image : Level{image.image * mask[0].image, image.index_to_world};
  };
  const Moments mf = moments(masked(f[0], fm)), mm = moments(masked(m[0], mmask));
  // The moments' scale only when plausible: a field of view that cuts the anatomy (a
  // slab, a head with or without the neck) changes the moments, not the size; never
  // with --rigid.
  double scale = volume_scale(mf, mm);
  if (scale < 0.8 || scale > 1.25 || o.rigid) scale = 1.0;
  const double radius = std::sqrt(std::max(1.0, at::trace(mf.covariance).item<double>()));
  const at::Tensor t0 = mm.centre - mf.centre;

  // Candidate rotations: the headers' orientation, then principal axes matched with
  // the four sign choices that make a rotation.
  std::vector<at::Tensor> rotations = {at::eye(3, at::kDouble)};
  if (o.principal_axes) {
    const at::Tensor ef = std::get<1>(at::linalg_eigh(mf.covariance));
    const at::Tensor em = std::get<1>(at::linalg_eigh(mm.covariance));
    const double sign = at::det(ef).item<double>() * at::det(em).item<double>();
    for (int flips = 0; flips < 8; ++flips) {
      const double s0 = flips & 1 ? -1 : 1, s1 = flips & 2 ? -1 : 1, s2 = flips & 4 ? -1 : 1;
      if (s0 * s1 * s2 * sign < 0) continue;
      const at::Tensor s = at::diag(at::tensor({s0, s1, s2}, at::kDouble));
      rotations.push_back(em.matmul(s).matmul(ef.t()));
    }
  }
  // Starts: the headers' own alignment (scans of one session share scanner space), then
  // the moments' translation with each candidate rotation.
  std::vector<std::pair<at::Tensor, at::Tensor>> starts = {
      {at::eye(3, at::kDouble), at::zeros({3}, at::kDouble)}};
  for (const at::Tensor& r : rotations) starts.emplace_back(r * scale, t0);
  AffineFit fit(f, m, fm, mmask, mf.centre, radius, o);
  at::Tensor best_m = starts[1].first, best_t = starts[1].second;
  if (o.candidate_iterations > 0) {
    double best = std::numeric_limits<double>::infinity();
    for (const auto& [m0, start_t] : starts) {
      auto [mr, tr, loss] = fit.run(0, m0, start_t, o.candidate_iterations, false);
      if (loss < best) {
        best = loss;
        best_m = mr;
        best_t = tr;
      }
    }
  }
  double fitted = 0;
  for (size_t level = 0; level < f.size(); ++level) {
    auto [mr, tr, loss] = fit.run(int(level), best_m, best_t, o.iterations[level], true);
    best_m = mr;
    best_t = tr;
    fitted = loss;
  }
  // The headers' alignment on the same points, for the caller's check (its own measure
  // is the one the fit optimised: a caller judges by another, pipeline::register_pair).
  if (report) {
    report->fitted_loss = fitted;
    report->headers_loss = std::get<2>(fit.run(int(f.size()) - 1, starts[0].first, starts[0].second, 0, false));
  }
  return to_matrix(best_m, best_t, mf.centre);
}

}  // namespace autoreg::registration
