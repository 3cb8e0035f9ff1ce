// Shared by the operator tests: a slow, obviously correct warp, the conversion of a
// displacement field to torch's grid_sample grid, random smooth fields and error norms.
#pragma once

#include <ATen/ATen.h>

#include <cmath>
#include <string>

#include "autoreg/ops.h"

namespace autoreg::test {

// warp by the definition: out(x) = Σ over the 8 neighbours of x + u(x) of weight ×
// value, each value zero outside the volume (zeros) or the position clamped first
// (border); nearest takes the voxel at round-half-even(position). Positions are formed
// in the input's precision (as the kernels do), everything else in double.
inline at::Tensor reference_warp(const at::Tensor& image, const at::Tensor& disp,
                                 ops::Interpolation interp, ops::Padding pad) {
  const at::Tensor img = image.to(at::kDouble).contiguous();
  const at::Tensor u = disp.contiguous();
  at::Tensor out = at::zeros(image.sizes(), img.options());
  const int64_t N = img.size(0), C = img.size(1), D = img.size(2), H = img.size(3), W = img.size(4);
  const int64_t size[3] = {D, H, W};
  auto I = img.accessor<double, 5>();
  auto O = out.accessor<double, 5>();
  const bool is_float = disp.scalar_type() == at::kFloat;
  const at::Tensor ud = u.to(at::kDouble);
  auto U = ud.accessor<double, 5>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t d = 0; d < D; ++d)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w) {
          const int64_t x[3] = {d, h, w};
          double p[3];
          for (int a = 0; a < 3; ++a) {
            const double q = U[n][a][d][h][w];
            p[a] = is_float ? double(float(x[a]) + float(q)) : double(x[a]) + q;
            if (pad == ops::Padding::Border) p[a] = std::min(std::max(p[a], 0.0), double(size[a] - 1));
          }
          for (int64_t c = 0; c < C; ++c) {
            double acc = 0;
            if (interp == ops::Interpolation::Nearest) {
              int64_t i[3];
              bool in = true;
              for (int a = 0; a < 3; ++a) {
                i[a] = static_cast<int64_t>(std::nearbyint(p[a]));
                in = in && i[a] >= 0 && i[a] < size[a];
              }
              if (in) acc = I[n][c][i[0]][i[1]][i[2]];
            } else {
              for (int k = 0; k < 8; ++k) {
                double weight = 1;
                int64_t i[3];
                bool in = true;
                for (int a = 0; a < 3; ++a) {
                  const double f = std::floor(p[a]);
                  const int bit = (k >> (2 - a)) & 1;
                  i[a] = static_cast<int64_t>(f) + bit;
                  weight *= bit ? p[a] - f : 1 - (p[a] - f);
                  in = in && i[a] >= 0 && i[a] < size[a];
                }
                if (in) acc += weight * I[n][c][i[0]][i[1]][i[2]];
              }
            }
            O[n][c][d][h][w] = acc;
          }
        }
  return out.to(image.scalar_type());
}

// The grid_sample grid (N×D×H×W×3, x=W, y=H, z=D, align_corners=True) of a field.
inline at::Tensor to_grid(const at::Tensor& disp) {
  const int64_t D = disp.size(2), H = disp.size(3), W = disp.size(4);
  auto opts = disp.options();
  auto norm = [&](int64_t dim, int64_t size) {
    std::vector<int64_t> shape = {1, 1, 1};
    shape[dim] = size;
    const at::Tensor base = at::arange(size, opts).view(shape);
    return (disp.select(1, dim) + base) * (2.0 / double(size - 1)) - 1.0;
  };
  return at::stack({norm(2, W), norm(1, H), norm(0, D)}, -1);
}

inline at::Tensor grid_sample_warp(const at::Tensor& image, const at::Tensor& disp,
                                   ops::Interpolation interp, ops::Padding pad) {
  return at::grid_sampler(image, to_grid(disp), interp == ops::Interpolation::Nearest ? 1 : 0,
                          pad == ops::Padding::Border ? 1 : 0, /*align_corners=*/true);
}

// A smooth random displacement: uniform noise on a coarse grid, upsampled trilinearly.
inline at::Tensor smooth_field(int64_t n, int64_t D, int64_t H, int64_t W, double amplitude,
                               at::TensorOptions opts = at::kFloat, int64_t coarse = 4) {
  const at::Tensor c = (at::rand({n, 3, coarse, coarse, coarse}, opts.dtype(at::kDouble)) * 2 - 1) * amplitude;
  return at::upsample_trilinear3d(c, {D, H, W}, /*align_corners=*/true).to(opts);
}

// max |a - b| / max |b|: the relative error the tolerances refer to.
inline double relative_error(const at::Tensor& a, const at::Tensor& b) {
  const double scale = b.abs().max().item<double>();
  const double diff = (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
  return scale > 0 ? diff / scale : diff;
}

inline const char* name(ops::Interpolation i) {
  return i == ops::Interpolation::Linear ? "linear" : "nearest";
}
inline const char* name(ops::Padding p) { return p == ops::Padding::Zeros ? "zeros" : "border"; }

}  // namespace autoreg::test
