#include "autoreg/registration/discrete.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "autoreg/registration/similarity.h"
#include "pooling.h"

namespace autoreg::registration {
namespace {

using detail::downsample;
using detail::Factors;

// Mean over the 3×3×3 neighbourhood (clipped at the borders), `times` times: the cost
// maps' aggregation and the coupling's smoothing (about a Gaussian of σ √(2·times/3)).
at::Tensor smoothed(at::Tensor t, int times) {
  for (int i = 0; i < times; ++i) t = at::avg_pool3d(t, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, false, false);
  return t;
}

}  // namespace

at::Tensor discrete_displacement(const at::Tensor& fixed, const at::Tensor& moving, const DiscreteOptions& o,
                                 const at::Tensor& fixed_mask) {
  TORCH_CHECK(fixed.dim() == 5 && fixed.size(0) == 1 && fixed.size(1) == 1 && fixed.sizes() == moving.sizes(),
              "discrete_displacement: fixed and moving must be 1×1×D×H×W of one size, got ", fixed.sizes(), " and ",
              moving.sizes());
  TORCH_CHECK(!fixed_mask.defined() || fixed_mask.sizes() == fixed.sizes(), "discrete_displacement: the mask must be ",
              fixed.sizes(), ", got ", fixed_mask.sizes());
  TORCH_CHECK(o.radius_mm > 0 && o.grid_mm > 0, "discrete_displacement: the radius and the grid must be positive");
  c10::AutoGradMode no_grad(false);
  const at::Device device = fixed.device();
  const at::Tensor f = fixed.to(at::kCPU, at::kFloat), m = moving.to(at::kCPU, at::kFloat);
  // The grid: steps of about grid_mm per axis; the descriptors on images pooled by half
  // of it (MIND-SSC's patches then span about the grid's voxel), then pooled to it.
  Factors step{}, half{}, rest{};
  std::array<int64_t, 3> radius{};
  for (int a = 0; a < 3; ++a) {
    const double s = o.spacing[size_t(a)] > 0 ? o.spacing[size_t(a)] : 1.0;
    step[a] = std::clamp<int64_t>(std::llround(o.grid_mm / s), 1, f.size(2 + a));
    half[a] = std::max<int64_t>(1, step[a] / 2);
    rest[a] = std::max<int64_t>(1, step[a] / half[a]);
    step[a] = half[a] * rest[a];
    radius[a] = std::clamp<int64_t>(std::llround(o.radius_mm / (s * double(step[a]))), 0, kMaxDiscreteRadius);
  }
  const at::Tensor fd = downsample(mind_ssc(downsample(f, half), 1, 2), rest).contiguous();
  const at::Tensor md = downsample(mind_ssc(downsample(m, half), 1, 2), rest).contiguous();
  const int64_t C = fd.size(1), D = fd.size(2), H = fd.size(3), W = fd.size(4), n = D * H * W;
  const at::Tensor padded =
      at::replication_pad3d(md, {radius[2], radius[2], radius[1], radius[1], radius[0], radius[0]}).contiguous();
  // The cost volume: for each displacement (grid voxels) the descriptors' mean squared
  // difference, aggregated over 3×3×3 (as ConvexAdam); no cost outside the fixed field of view.
  std::vector<std::array<int64_t, 3>> shifts;
  for (int64_t z = -radius[0]; z <= radius[0]; ++z)
    for (int64_t y = -radius[1]; y <= radius[1]; ++y)
      for (int64_t x = -radius[2]; x <= radius[2]; ++x) shifts.push_back({z, y, x});
  // Shortest first: where the cost is flat (air, a uniform organ) the first of equal
  // candidates wins, and that should be the smallest motion, not the window's corner
  // (which left the air of liver frames 5-12 mm off).
  std::stable_sort(shifts.begin(), shifts.end(), [](const auto& a, const auto& b) {
    return a[0] * a[0] + a[1] * a[1] + a[2] * a[2] < b[0] * b[0] + b[1] * b[1] + b[2] * b[2];
  });
  const int64_t K = int64_t(shifts.size());
  at::Tensor cost = at::empty({K, 1, D, H, W}, at::kFloat);
  {
    // One pass per displacement over the voxels, the channels summed in place (no
    // volume-sized temporaries: 1331 displacements on the liver's grid).
    const int64_t PD = padded.size(2), PH = padded.size(3), PW = padded.size(4), pn = PD * PH * PW;
    const float* fp = fd.data_ptr<float>();
    const float* mp = padded.data_ptr<float>();
    float* out = cost.data_ptr<float>();
    at::parallel_for(0, K * D, 1, [&](int64_t begin, int64_t end) {
      for (int64_t kz = begin; kz < end; ++kz) {
        const int64_t k = kz / D, z = kz % D;
        const auto& s = shifts[size_t(k)];
        for (int64_t y = 0; y < H; ++y) {
          float* row = out + k * n + (z * H + y) * W;
          const int64_t moved = ((z + radius[0] + s[0]) * PH + (y + radius[1] + s[1])) * PW + radius[2] + s[2];
          for (int64_t x = 0; x < W; ++x) row[x] = 0;
          for (int64_t c = 0; c < C; ++c) {
            const float* a = fp + c * n + (z * H + y) * W;
            const float* b = mp + c * pn + moved;
            for (int64_t x = 0; x < W; ++x) {
              const float d = a[x] - b[x];
              row[x] += d * d;
            }
          }
          for (int64_t x = 0; x < W; ++x) row[x] /= float(C);
        }
      }
    });
  }
  cost = smoothed(cost, 1);
  if (fixed_mask.defined()) cost = cost * downsample(fixed_mask.to(at::kCPU, at::kFloat), step).gt(0.5).to(at::kFloat);
  // Voxel-major for the coupling: each voxel's candidates side by side in memory.
  cost = cost.view({K, n}).t().contiguous();
  // The coupled optimisation: u = argmin_d cost(d) + θ·|d − v|², v = u smoothed.
  at::Tensor v = at::zeros({1, 3, D, H, W}, at::kFloat);
  at::Tensor u = at::empty({1, 3, D, H, W}, at::kFloat);
  const float* c = cost.data_ptr<float>();
  std::vector<float> offsets;
  for (const auto& d : shifts) offsets.insert(offsets.end(), {float(d[0]), float(d[1]), float(d[2])});
  for (const double theta : o.coupling) {
    const float* vp = v.data_ptr<float>();
    float* up = u.data_ptr<float>();
    at::parallel_for(0, n, 1024, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        float best = std::numeric_limits<float>::infinity();
        int64_t arg = 0;
        const float* ci = c + i * K;
        const float v0 = vp[i], v1 = vp[n + i], v2 = vp[2 * n + i], t = float(theta);
        for (int64_t k = 0; k < K; ++k) {
          const float* d = offsets.data() + 3 * k;
          const float d0 = d[0] - v0, d1 = d[1] - v1, d2 = d[2] - v2;
          const float total = ci[k] + t * (d0 * d0 + d1 * d1 + d2 * d2);
          if (total < best) {
            best = total;
            arg = k;
          }
        }
        for (int a = 0; a < 3; ++a) up[a * n + i] = float(shifts[size_t(arg)][size_t(a)]);
      }
    });
    v = smoothed(u, 3).contiguous();
  }
  // Grid voxels → the images' voxels, on the images' grid.
  at::Tensor full = at::upsample_trilinear3d(v, fixed.sizes().slice(2), /*align_corners=*/false);
  full = full * at::tensor({double(step[0]), double(step[1]), double(step[2])}, at::kFloat).view({1, 3, 1, 1, 1});
  return full.contiguous().to(device);
}

}  // namespace autoreg::registration
