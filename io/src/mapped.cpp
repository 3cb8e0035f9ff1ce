#include "autoreg/io/mapped.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "autoreg/io/field.h"
#include "autoreg/io/grid.h"

namespace autoreg::io {
namespace {

using Matrix = std::array<double, 12>;  // 3×4, row-major

// to · affine · from as a 3×4 matrix (homogeneous index → homogeneous index).
Matrix chain(const at::Tensor& to, const at::Tensor& affine, const at::Tensor& from) {
  at::Tensor m = affine.defined() ? to.matmul(affine.to(at::kDouble).cpu()).matmul(from) : to.matmul(from);
  m = m.contiguous();
  const auto a = m.accessor<double, 2>();
  Matrix out{};
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 4; ++c) out[r * 4 + c] = a[r][c];
  return out;
}

void check_displacement(const at::Tensor& u, const Geometry& g) {
  if (!u.defined()) return;
  TORCH_CHECK(u.dim() == 5 && u.size(0) == 1 && u.size(1) == 3 && u.size(2) == g.size[2] &&
                  u.size(3) == g.size[1] && u.size(4) == g.size[0] && u.scalar_type() == at::kFloat,
              "displacement must be float32 1×3×D×H×W on the target grid, got ", u.sizes());
}

// Calls f(index, p, q) for every voxel p = (i, j, k), q = p + u(p), rows in parallel.
template <typename F>
void for_each_voxel(const Geometry& g, const float* u, F&& f) {
  const int64_t w = g.size[0], h = g.size[1], d = g.size[2], n = w * h * d;
  at::parallel_for(0, d * h, std::max<int64_t>(1, 4096 / std::max<int64_t>(w, 1)), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t k = row / h, j = row % h;
      const int64_t base = row * w;
      for (int64_t i = 0; i < w; ++i) {
        const std::array<double, 3> p{double(i), double(j), double(k)};
        std::array<double, 3> q = p;
        if (u) {
          q[0] += u[2 * n + base + i];
          q[1] += u[n + base + i];
          q[2] += u[base + i];
        }
        f(base + i, p, q);
      }
    }
  });
}

template <typename T, bool kNearest>
void sample(const at::Tensor& data, const Matrix& m, const Geometry& target, const float* u, Outside outside,
            at::Tensor& out) {
  const int64_t channels = data.size(1), sd = data.size(2), sh = data.size(3), sw = data.size(4);
  const int64_t source_voxels = sd * sh * sw, target_voxels = out.numel() / channels;
  const T* src = data.data_ptr<T>();
  T* dst = out.data_ptr<T>();
  const std::array<int64_t, 3> n{sw, sh, sd};
  for_each_voxel(target, u, [&](int64_t index, const std::array<double, 3>&, const std::array<double, 3>& q) {
    std::array<double, 3> x{};
    bool inside = true;
    for (int r = 0; r < 3; ++r) {
      x[r] = m[r * 4] * q[0] + m[r * 4 + 1] * q[1] + m[r * 4 + 2] * q[2] + m[r * 4 + 3];
      inside = inside && x[r] >= -0.5 && x[r] < double(n[r]) - 0.5;  // false for NaN
    }
    if (!inside && (outside == Outside::Zero || std::isnan(x[0] + x[1] + x[2]))) {
      for (int64_t c = 0; c < channels; ++c) dst[c * target_voxels + index] = T(0);
      return;
    }
    for (int r = 0; r < 3; ++r) x[r] = std::clamp(x[r], 0.0, double(n[r] - 1));
    if constexpr (kNearest) {
      // As grid_sampler's nearest mode: round half to even.
      const int64_t at = (int64_t(std::nearbyint(x[2])) * sh + int64_t(std::nearbyint(x[1]))) * sw +
                         int64_t(std::nearbyint(x[0]));
      for (int64_t c = 0; c < channels; ++c) dst[c * target_voxels + index] = src[c * source_voxels + at];
    } else {
      std::array<int64_t, 3> lo{}, hi{};
      std::array<float, 3> f{};
      for (int r = 0; r < 3; ++r) {
        lo[r] = std::min<int64_t>(int64_t(x[r]), n[r] - 1);  // x >= 0: truncation is floor
        hi[r] = std::min<int64_t>(lo[r] + 1, n[r] - 1);
        f[r] = float(x[r] - double(lo[r]));
      }
      const int64_t z0 = lo[2] * sh * sw, z1 = hi[2] * sh * sw, y0 = lo[1] * sw, y1 = hi[1] * sw;
      for (int64_t c = 0; c < channels; ++c) {
        const T* s = src + c * source_voxels;
        const float c00 = s[z0 + y0 + lo[0]] + f[0] * (s[z0 + y0 + hi[0]] - s[z0 + y0 + lo[0]]);
        const float c01 = s[z0 + y1 + lo[0]] + f[0] * (s[z0 + y1 + hi[0]] - s[z0 + y1 + lo[0]]);
        const float c10 = s[z1 + y0 + lo[0]] + f[0] * (s[z1 + y0 + hi[0]] - s[z1 + y0 + lo[0]]);
        const float c11 = s[z1 + y1 + lo[0]] + f[0] * (s[z1 + y1 + hi[0]] - s[z1 + y1 + lo[0]]);
        const float c0 = c00 + f[1] * (c01 - c00), c1 = c10 + f[1] * (c11 - c10);
        dst[c * target_voxels + index] = T(c0 + f[2] * (c1 - c0));
      }
    }
  });
}

}  // namespace

at::Tensor sample_mapped(const Volume& volume, const Geometry& target, const at::Tensor& affine,
                         const at::Tensor& displacement, Outside outside) {
  const at::Tensor& data = volume.data;
  const auto& vs = volume.geometry.size;
  TORCH_CHECK(data.dim() == 5 && data.size(0) == 1 && data.size(2) == vs[2] && data.size(3) == vs[1] &&
                  data.size(4) == vs[0] && data.device().is_cpu(),
              "sample_mapped: volume data must be a CPU tensor 1×C×D×H×W matching its geometry, got ", data.sizes());
  const at::ScalarType t = data.scalar_type();
  TORCH_CHECK(t == at::kFloat || t == at::kInt, "sample_mapped: volume data must be float32 or int32, got ", t);
  TORCH_CHECK(!affine.defined() || affine.sizes() == at::IntArrayRef({4, 4}), "sample_mapped: affine must be 4×4");
  check_displacement(displacement, target);
  const Matrix m = chain(at::inverse(index_to_world(volume.geometry)), affine, index_to_world(target));
  const at::Tensor src = data.contiguous();
  const at::Tensor u = displacement.defined() ? displacement.contiguous() : at::Tensor();
  at::Tensor out = at::empty({1, data.size(1), target.size[2], target.size[1], target.size[0]}, data.options());
  const float* up = u.defined() ? u.data_ptr<float>() : nullptr;
  if (t == at::kInt) {
    sample<int32_t, true>(src, m, target, up, outside, out);
  } else {
    sample<float, false>(src, m, target, up, outside, out);
  }
  return out;
}

namespace {

// out = x⁻¹(A·x(p + u(p))) − p per voxel; `out` may be `u` itself (each voxel reads only
// its own vector before writing it).
void compose_into(const Geometry& grid, const at::Tensor& affine, const float* u, float* o) {
  const at::Tensor to_world = index_to_world(grid);
  const Matrix m = chain(at::inverse(to_world), affine, to_world);
  const int64_t n = grid.size[0] * grid.size[1] * grid.size[2];
  for_each_voxel(grid, u, [&](int64_t index, const std::array<double, 3>& p, const std::array<double, 3>& q) {
    for (int r = 0; r < 3; ++r) {
      const double y = m[r * 4] * q[0] + m[r * 4 + 1] * q[1] + m[r * 4 + 2] * q[2] + m[r * 4 + 3];
      o[(2 - r) * n + index] = float(y - p[r]);  // channels k, j, i
    }
  });
}

void check_affine(const at::Tensor& affine) {
  TORCH_CHECK(affine.defined() && affine.sizes() == at::IntArrayRef({4, 4}), "compose_affine: affine must be 4×4");
}

}  // namespace

at::Tensor compose_affine(const Geometry& grid, const at::Tensor& affine, const at::Tensor& displacement) {
  check_affine(affine);
  check_displacement(displacement, grid);
  const at::Tensor u = displacement.defined() ? displacement.contiguous() : at::Tensor();
  at::Tensor out = at::empty({1, 3, grid.size[2], grid.size[1], grid.size[0]}, at::kFloat);
  compose_into(grid, affine, u.defined() ? u.data_ptr<float>() : nullptr, out.data_ptr<float>());
  return out;
}

at::Tensor compose_affine_(const Geometry& grid, const at::Tensor& affine, at::Tensor displacement) {
  check_affine(affine);
  TORCH_CHECK(displacement.defined() && displacement.device().is_cpu(), "compose_affine_: a CPU displacement");
  check_displacement(displacement, grid);
  displacement = displacement.contiguous();
  compose_into(grid, affine, displacement.data_ptr<float>(), displacement.data_ptr<float>());
  return displacement;
}

at::Tensor inverse_map(const Geometry& moving_grid, const Geometry& fixed_grid, const at::Tensor& affine,
                       const at::Tensor& inverse_displacement) {
  check_affine(affine);
  const at::Tensor back = at::inverse(affine.to(at::kDouble));
  at::Tensor out = compose_affine(moving_grid, back, at::Tensor());
  if (inverse_displacement.defined()) {
    check_displacement(inverse_displacement, fixed_grid);
    const Volume field{inverse_displacement.to(at::kFloat).contiguous(), fixed_grid};
    const at::Tensor in_fixed_voxels = sample_mapped(field, moving_grid, back, at::Tensor(), Outside::Border);
    Geometry fixed_axes = fixed_grid;  // the fixed grid's voxel vectors, at the moving grid's voxels
    fixed_axes.size = moving_grid.size;
    out += physical_to_voxel(voxel_to_physical(in_fixed_voxels, fixed_axes), moving_grid);
  }
  return out;
}

at::Tensor round_trip_error_mm(const Geometry& fixed_grid, const at::Tensor& forward, const Geometry& moving_grid,
                               const at::Tensor& inverse) {
  check_displacement(forward, fixed_grid);
  check_displacement(inverse, moving_grid);
  const Volume back{voxel_to_physical(inverse.to(at::kFloat), moving_grid).contiguous(), moving_grid};
  const at::Tensor there = voxel_to_physical(forward.to(at::kFloat), fixed_grid);
  const at::Tensor back_there = sample_mapped(back, fixed_grid, at::Tensor(), forward.contiguous(), Outside::Border);
  return (there + back_there).norm(2, {1}, /*keepdim=*/true);
}

}  // namespace autoreg::io
