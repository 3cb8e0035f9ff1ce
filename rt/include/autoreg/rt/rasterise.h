// An ROI's closed planar contours filled on a grid: voxel (i, j, k) is inside when its
// centre is inside the contours of slice k by the even-odd rule over all of that
// slice's contours of the ROI (the RTSTRUCT convention: holes and islands).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "autoreg/rt/grid.h"
#include "autoreg/rt/structure_set.h"

namespace autoreg::rt {

struct Rasterised {
  std::vector<uint8_t> mask;  // voxel_count(grid) values, 1 inside, 0 outside (grid.h's order)
  int contours_filled = 0;    // contours on a slice of the grid
  int contours_outside = 0;   // contours on a plane beyond the grid's first or last slice: skipped
};

// Fills `roi` on `grid` by scan lines in each slice's voxel coordinates (milliseconds for
// 512 × 512 × 100 voxels and thousands of points). Every contour must lie in one slice
// plane of the grid: each point within a tenth of the slice spacing of the plane of the
// contour's first point, that plane an integer k; else DicomError starting with `file`
// (the structure set's path, for the message) naming the ROI, the contour and how far
// off the plane it is, in mm. Contours whose plane is outside the grid are counted, not
// filled; parts of a contour beyond the grid's rows or columns are clipped.
Rasterised rasterise(const Roi& roi, const Grid& grid, const std::string& file = "");

}  // namespace autoreg::rt
