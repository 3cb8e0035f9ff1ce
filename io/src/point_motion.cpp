// Points moved through a displacement field or an affine (io/points.h), by the samplers
// the volumes use: io::sample_at for the field (the voxel displacement at each point,
// trilinear, then turned into LPS mm), io::transform_points for an affine.
#include <ATen/ATen.h>

#include <string>

#include "autoreg/io/grid.h"
#include "autoreg/io/points.h"
#include "autoreg/io/transform.h"
#include "point_detail.h"

namespace autoreg::io {
namespace {

using point_detail::Point;

// The points as the samplers take them: 1×3×N×1×1, float64.
at::Tensor as_tensor(const std::vector<Point>& points) {
  at::Tensor t = at::empty({int64_t(points.size()), 3}, at::kDouble);
  for (size_t n = 0; n < points.size(); ++n) {
    for (int c = 0; c < 3; ++c) t[int64_t(n)][c] = points[n][c];
  }
  return t.t().reshape({1, 3, int64_t(points.size()), 1, 1});
}

std::vector<Point> as_points(const at::Tensor& t) {
  const at::Tensor rows = t.reshape({3, -1}).t().to(at::kDouble).contiguous();
  const auto a = rows.accessor<double, 2>();
  std::vector<Point> out(size_t(rows.size(0)));
  for (size_t n = 0; n < out.size(); ++n) out[n] = {a[int64_t(n)][0], a[int64_t(n)][1], a[int64_t(n)][2]};
  return out;
}

}  // namespace

std::vector<Point> displace_points(const std::vector<Point>& points, const at::Tensor& voxels, const Geometry& g,
                                   const std::string& what) {
  for (size_t n = 0; n < points.size(); ++n) {
    const Point index = point_detail::point_to_index(points[n], g);
    for (int c = 0; c < 3; ++c) {
      if (!(index[c] >= -0.5 && index[c] < double(g.size[c]) - 0.5)) {  // sample_at's extent
        const Point& p = points[n];
        throw IoError(what + " point " + std::to_string(n + 1) + " (" + std::to_string(p[0]) + ", " + std::to_string(p[1]) +
                      ", " + std::to_string(p[2]) + " mm LPS) lies outside the field's grid");
      }
    }
  }
  if (points.empty()) return {};
  // The voxel displacement (channels k, j, i) at each point, then d = Direction ·
  // diag(spacing) · (u_i, u_j, u_k) (field.h): the index-to-point map less its origin.
  const std::vector<Point> u = as_points(sample_at(Volume{voxels.to(at::kFloat), g}, as_tensor(points)));
  std::vector<Point> moved(points.size());
  for (size_t n = 0; n < points.size(); ++n) {
    const Point d = point_detail::index_to_point({u[n][2], u[n][1], u[n][0]}, g);
    for (int c = 0; c < 3; ++c) moved[n][c] = points[n][c] + d[c] - g.origin[c];
  }
  return moved;
}

std::vector<Point> affine_points(const std::vector<Point>& points, const at::Tensor& affine) {
  if (points.empty()) return {};
  return as_points(transform_points(affine.to(at::kDouble), as_tensor(points)));
}

}  // namespace autoreg::io
