#include "autoreg/registration/discrete.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "autoreg/registration/similarity.h"
#include "pooling.h"

namespace autoreg::registration {
namespace {

using detail::downsample;
using detail::Factors;

// Mean over the 3×3×3 neighbourhood (clipped at the borders), `times` times: the coupling's
// smoothing (about a Gaussian of σ √(2·times/3)).
at::Tensor smoothed(at::Tensor t, int times) {
  for (int i = 0; i < times; ++i) t = at::avg_pool3d(t, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, false, false);
  return t;
}

// What every slab of the cost volume is computed from.
struct Search {
  at::Tensor fixed;   // the fixed descriptors, C×D×H×W on the grid
  at::Tensor padded;  // the moving ones, replication-padded by the radius along each axis
  at::Tensor mask;    // 1 where the fixed image has data, D×H×W (undefined: everywhere)
  std::array<int64_t, 3> radius{};
  std::vector<std::array<int64_t, 3>> shifts;  // the candidates, grid voxels, shortest first
  std::vector<std::array<float, 3>> offsets;   // the same as floats, for the coupling's distances
  int64_t C = 0, D = 0, H = 0, W = 0;
  int64_t K() const { return int64_t(shifts.size()); }
};

// The descriptors' mean squared difference for every candidate at the grid's slices
// [z0, z1), voxel-major (each voxel's K candidates side by side), into `out`.
void raw_cost(const Search& s, int64_t z0, int64_t z1, float* out) {
  const int64_t K = s.K(), H = s.H, W = s.W, n = s.D * H * W;
  const int64_t PH = s.padded.size(2), PW = s.padded.size(3), pn = s.padded.size(1) * PH * PW;
  const float* fp = s.fixed.data_ptr<float>();
  const float* mp = s.padded.data_ptr<float>();
  at::parallel_for(z0 * H, z1 * H, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> rows(size_t(K * W));  // one row of voxels, candidate-major, then transposed
    for (int64_t zy = begin; zy < end; ++zy) {
      const int64_t z = zy / H, y = zy % H;
      for (int64_t k = 0; k < K; ++k) {
        const auto& d = s.shifts[size_t(k)];
        float* row = rows.data() + k * W;
        const int64_t moved = ((z + s.radius[0] + d[0]) * PH + (y + s.radius[1] + d[1])) * PW + s.radius[2] + d[2];
        std::fill(row, row + W, 0.f);
        for (int64_t c = 0; c < s.C; ++c) {
          const float* a = fp + c * n + (z * H + y) * W;
          const float* b = mp + c * pn + moved;
          for (int64_t x = 0; x < W; ++x) {
            const float e = a[x] - b[x];
            row[x] += e * e;
          }
        }
      }
      float* voxels = out + ((z - z0) * H + y) * W * K;
      for (int64_t x = 0; x < W; ++x)
        for (int64_t k = 0; k < K; ++k) voxels[x * K + k] = rows[size_t(k * W + x)] / float(s.C);
    }
  });
}

// The mean of each voxel's cost with its two neighbours along one axis (clipped at the
// ends), in place: `lines` lines of `length` voxels, `step` voxels apart along the line,
// line l starting at voxel first(l); K floats a voxel.
template <typename First>
void mean_along(float* cost, int64_t K, int64_t lines, int64_t length, int64_t step, First first) {
  if (length < 2) return;
  at::parallel_for(0, lines, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> before(static_cast<size_t>(K)), here(static_cast<size_t>(K));  // the line's original values at i − 1 and i
    for (int64_t l = begin; l < end; ++l) {
      float* v = cost + first(l) * K;
      for (int64_t i = 0; i < length; ++i) {
        float* p = v + i * step * K;
        std::copy(p, p + K, here.begin());
        const float* next = i + 1 < length ? p + step * K : nullptr;
        const float count = float(1 + (i > 0) + (next != nullptr));
        for (int64_t k = 0; k < K; ++k)
          p[k] = (here[size_t(k)] + (i > 0 ? before[size_t(k)] : 0.f) + (next ? next[k] : 0.f)) / count;
        before.swap(here);
      }
    }
  });
}

// The cost of slices [z0, z1) aggregated over 3×3×3 voxels (as ConvexAdam), none where
// the fixed image has no data (its pooled mask at or below 0.5): computed into `out` on
// [z0 − 1, z1 + 1) (within the grid), so that the slab's own slices see their neighbours;
// returns where in `out` slice z0 begins.
const float* cost_slab(const Search& s, int64_t z0, int64_t z1, float* out) {
  const int64_t a = std::max<int64_t>(0, z0 - 1), b = std::min(s.D, z1 + 1), K = s.K(), H = s.H, W = s.W;
  raw_cost(s, a, b, out);
  const int64_t depth = b - a;
  mean_along(out, K, depth * H, W, 1, [&](int64_t l) { return l * W; });
  mean_along(out, K, depth * W, H, W, [&](int64_t l) { return (l / W) * H * W + l % W; });
  mean_along(out, K, H * W, depth, H * W, [&](int64_t l) { return l; });
  if (s.mask.defined()) {
    const float* inside = s.mask.data_ptr<float>() + a * H * W;
    at::parallel_for(0, depth * H * W, 4096, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        if (inside[i] <= 0.5f) std::fill_n(out + i * K, K, 0.f);
    });
  }
  return out + (z0 - a) * H * W * K;
}

// One step of the coupled optimisation for the voxels [first, first + count): u = argmin_d
// cost(d) + θ·|d − v|² over the candidates d, with `cost` from the slab's first voxel.
void choose(const Search& s, const float* cost, int64_t first, int64_t count, double theta, const at::Tensor& v,
            at::Tensor& u) {
  const int64_t K = s.K(), n = s.D * s.H * s.W;
  const float* vp = v.data_ptr<float>();
  float* up = u.data_ptr<float>();
  const float t = float(theta);
  at::parallel_for(0, count, 1024, [&](int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j) {
      const int64_t i = first + j;
      const float* ci = cost + j * K;
      const float v0 = vp[i], v1 = vp[n + i], v2 = vp[2 * n + i];
      float best = std::numeric_limits<float>::infinity();
      int64_t arg = 0;
      for (int64_t k = 0; k < K; ++k) {
        const auto& d = s.offsets[size_t(k)];
        const float d0 = d[0] - v0, d1 = d[1] - v1, d2 = d[2] - v2;
        const float total = ci[k] + t * (d0 * d0 + d1 * d1 + d2 * d2);
        if (total < best) {
          best = total;
          arg = k;
        }
      }
      for (int c = 0; c < 3; ++c) up[c * n + i] = float(s.shifts[size_t(arg)][size_t(c)]);
    }
  });
}

}  // namespace

at::Tensor discrete_displacement(const at::Tensor& fixed, const at::Tensor& moving, const DiscreteOptions& o,
                                 const at::Tensor& fixed_mask) {
  TORCH_CHECK(fixed.dim() == 5 && fixed.size(0) == 1 && fixed.size(1) == 1 && fixed.sizes() == moving.sizes(),
              "discrete_displacement: fixed and moving must be 1×1×D×H×W of one size, got ", fixed.sizes(), " and ",
              moving.sizes());
  TORCH_CHECK(!fixed_mask.defined() || fixed_mask.sizes() == fixed.sizes(), "discrete_displacement: the mask must be ",
              fixed.sizes(), ", got ", fixed_mask.sizes());
  TORCH_CHECK(o.radius_mm > 0 && o.grid_mm > 0 && o.max_cost_mib > 0,
              "discrete_displacement: the radius, the grid and the memory must be positive");
  c10::AutoGradMode no_grad(false);
  const at::Device device = fixed.device();
  const at::Tensor f = fixed.to(at::kCPU, at::kFloat), m = moving.to(at::kCPU, at::kFloat);
  // The grid: steps of about grid_mm per axis; the descriptors on images pooled by half
  // of it (MIND-SSC's patches then span about the grid's voxel), then pooled to it.
  Factors step{}, half{}, rest{};
  Search s;
  for (int a = 0; a < 3; ++a) {
    const double mm = o.spacing[size_t(a)] > 0 ? o.spacing[size_t(a)] : 1.0;
    step[a] = std::clamp<int64_t>(std::llround(o.grid_mm / mm), 1, f.size(2 + a));
    half[a] = std::max<int64_t>(1, step[a] / 2);
    rest[a] = std::max<int64_t>(1, step[a] / half[a]);
    step[a] = half[a] * rest[a];
    s.radius[size_t(a)] = std::clamp<int64_t>(std::llround(o.radius_mm / (mm * double(step[a]))), 0, kMaxDiscreteRadius);
  }
  s.fixed = downsample(mind_ssc(downsample(f, half), 1, 2), rest)[0].contiguous();
  const at::Tensor md = downsample(mind_ssc(downsample(m, half), 1, 2), rest);
  s.C = s.fixed.size(0), s.D = s.fixed.size(1), s.H = s.fixed.size(2), s.W = s.fixed.size(3);
  const auto& r = s.radius;
  s.padded = at::replication_pad3d(md, {r[2], r[2], r[1], r[1], r[0], r[0]})[0].contiguous();
  if (fixed_mask.defined()) s.mask = downsample(fixed_mask.to(at::kCPU, at::kFloat), step)[0][0].contiguous();
  for (int64_t z = -r[0]; z <= r[0]; ++z)
    for (int64_t y = -r[1]; y <= r[1]; ++y)
      for (int64_t x = -r[2]; x <= r[2]; ++x) s.shifts.push_back({z, y, x});
  // Shortest first: where the cost is flat (air, a uniform organ) the first of equal
  // candidates wins, and that should be the smallest motion, not the window's corner
  // (which left the air of liver frames 5-12 mm off).
  std::stable_sort(s.shifts.begin(), s.shifts.end(), [](const auto& a, const auto& b) {
    return a[0] * a[0] + a[1] * a[1] + a[2] * a[2] < b[0] * b[0] + b[1] * b[1] + b[2] * b[2];
  });
  for (const auto& d : s.shifts) s.offsets.push_back({float(d[0]), float(d[1]), float(d[2])});
  // The cost volume: all of it at once, kept for every step of the coupling, when it fits
  // in max_cost_mib; otherwise in slabs of slices that fit with their two neighbours (at
  // least one slice), each computed again at every step of the coupling.
  const int64_t plane = s.H * s.W;
  const int64_t slice_bytes = plane * s.K() * int64_t(sizeof(float));
  const int64_t budget = o.max_cost_mib * (int64_t(1) << 20);
  const bool whole = s.D * slice_bytes <= budget;
  const int64_t depth = whole ? s.D : std::max<int64_t>(1, budget / slice_bytes - 2);
  // One buffer for the volume or for every slab (uninitialised: each slab writes all of it).
  const std::unique_ptr<float[]> buffer(new float[size_t(std::min(s.D, depth + 2) * slice_bytes / int64_t(sizeof(float)))]);
  const float* all = whole ? cost_slab(s, 0, s.D, buffer.get()) : nullptr;
  // The coupled optimisation: u = argmin_d cost(d) + θ·|d − v|², v = u smoothed.
  at::Tensor v = at::zeros({1, 3, s.D, s.H, s.W}, at::kFloat);
  at::Tensor u = at::empty_like(v);
  for (const double theta : o.coupling) {
    if (whole) {
      choose(s, all, 0, s.D * plane, theta, v, u);
    } else {
      for (int64_t z0 = 0; z0 < s.D; z0 += depth) {
        const int64_t z1 = std::min(s.D, z0 + depth);
        choose(s, cost_slab(s, z0, z1, buffer.get()), z0 * plane, (z1 - z0) * plane, theta, v, u);
      }
    }
    v = smoothed(u, 3).contiguous();
  }
  // Grid voxels → the images' voxels, on the images' grid.
  at::Tensor full = at::upsample_trilinear3d(v, fixed.sizes().slice(2), /*align_corners=*/false);
  full = full * at::tensor({double(step[0]), double(step[1]), double(step[2])}, at::kFloat).view({1, 3, 1, 1, 1});
  return full.contiguous().to(device);
}

}  // namespace autoreg::registration
