// Points moved through a displacement field (io/points.h): the field's physical vectors
// interpolated trilinearly at each point's continuous index.
#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "autoreg/io/field.h"
#include "autoreg/io/points.h"
#include "point_detail.h"

namespace autoreg::io {

std::vector<std::array<double, 3>> displace_points(const std::vector<std::array<double, 3>>& points,
                                                   const at::Tensor& voxels, const Geometry& g,
                                                   const std::string& what) {
  const at::Tensor field = voxel_to_physical(voxels, g).to(at::kDouble).contiguous();  // 1×3×D×H×W, x y z
  const auto f = field.accessor<double, 5>();
  const int64_t size[3] = {g.size[0], g.size[1], g.size[2]};  // i, j, k
  std::vector<std::array<double, 3>> moved;
  moved.reserve(points.size());
  for (size_t n = 0; n < points.size(); ++n) {
    const auto& p = points[n];
    point_detail::Point index = point_detail::point_to_index(p, g);
    for (int c = 0; c < 3; ++c) {
      if (!(index[c] >= -0.5 && index[c] <= double(size[c]) - 0.5)) {
        throw IoError(what + " point " + std::to_string(n + 1) + " (" + std::to_string(p[0]) + ", " + std::to_string(p[1]) +
                      ", " + std::to_string(p[2]) + " mm LPS) lies outside the field's grid");
      }
      index[c] = std::clamp(index[c], 0.0, double(size[c] - 1));
    }
    int64_t lo[3];
    double w[3];
    for (int c = 0; c < 3; ++c) {
      lo[c] = std::min<int64_t>(int64_t(std::floor(index[c])), std::max<int64_t>(size[c] - 2, 0));
      w[c] = size[c] > 1 ? index[c] - double(lo[c]) : 0.0;
    }
    std::array<double, 3> out = p;
    for (int corner = 0; corner < 8; ++corner) {
      const int64_t i = lo[0] + (corner & 1), j = lo[1] + (corner >> 1 & 1), k = lo[2] + (corner >> 2 & 1);
      const double weight = ((corner & 1) ? w[0] : 1 - w[0]) * ((corner >> 1 & 1) ? w[1] : 1 - w[1]) *
                            ((corner >> 2 & 1) ? w[2] : 1 - w[2]);
      if (weight == 0) continue;
      for (int c = 0; c < 3; ++c) out[c] += weight * f[0][c][k][j][i];
    }
    moved.push_back(out);
  }
  return moved;
}

}  // namespace autoreg::io
