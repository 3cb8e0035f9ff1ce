#include "autoreg/rt/grid.h"

#include <cmath>
#include <stdexcept>

namespace autoreg::rt {

std::array<double, 3> index_to_physical(const Grid& grid, const std::array<double, 3>& index) {
  std::array<double, 3> p = grid.origin;
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) p[r] += grid.direction[r * 3 + c] * grid.spacing[c] * index[c];
  return p;
}

std::array<double, 3> physical_to_index(const Grid& grid, const std::array<double, 3>& point) {
  // M = direction · diag(spacing), inverted by its adjugate (the direction of a DICOM
  // series is orthonormal, but a general inverse costs nothing here).
  double m[3][3];
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) m[r][c] = grid.direction[r * 3 + c] * grid.spacing[c];
  const double det = m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) -
                     m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
                     m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
  if (!(std::fabs(det) > 1e-12)) throw std::invalid_argument("physical_to_index: the grid's axes are singular");
  double inv[3][3];
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) {
      const int r1 = (c + 1) % 3, r2 = (c + 2) % 3, c1 = (r + 1) % 3, c2 = (r + 2) % 3;
      inv[r][c] = (m[r1][c1] * m[r2][c2] - m[r1][c2] * m[r2][c1]) / det;
    }
  const double d[3] = {point[0] - grid.origin[0], point[1] - grid.origin[1], point[2] - grid.origin[2]};
  std::array<double, 3> index{};
  for (int r = 0; r < 3; ++r) index[r] = inv[r][0] * d[0] + inv[r][1] * d[1] + inv[r][2] * d[2];
  return index;
}

int64_t voxel_count(const Grid& grid) { return grid.size[0] * grid.size[1] * grid.size[2]; }

}  // namespace autoreg::rt
