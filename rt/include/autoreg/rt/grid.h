// A DICOM series' voxel grid, laid out as io::Geometry is (rt/ needs neither ITK nor
// LibTorch, so it has its own copy; pipeline/ converts field by field): index (i, j, k)
// is at physical point origin + direction · diag(spacing) · (i, j, k), in LPS millimetres.
// For a DICOM series, i runs along a row (ImageOrientationPatient's row cosine), j down
// the columns, k along the slice normal.
#pragma once

#include <array>
#include <cstdint>

namespace autoreg::rt {

struct Grid {
  std::array<int64_t, 3> size{0, 0, 0};                        // voxels along i, j, k
  std::array<double, 3> spacing{1, 1, 1};                      // mm along i, j, k
  std::array<double, 3> origin{0, 0, 0};                       // mm, LPS, of voxel (0,0,0)
  std::array<double, 9> direction{1, 0, 0, 0, 1, 0, 0, 0, 1};  // row-major; column c = axis c
};

// The physical point (LPS mm) of a continuous index.
std::array<double, 3> index_to_physical(const Grid& grid, const std::array<double, 3>& index);

// The continuous index of a physical point (the inverse of index_to_physical; the
// direction need not be orthogonal). Throws std::invalid_argument for a singular grid.
std::array<double, 3> physical_to_index(const Grid& grid, const std::array<double, 3>& point);

// Voxels of the grid: size[0] · size[1] · size[2]. Arrays over a grid (masks, values)
// hold voxel (i, j, k) at i + size[0] · (j + size[1] · k), as a tensor [k][j][i] does.
int64_t voxel_count(const Grid& grid);

}  // namespace autoreg::rt
