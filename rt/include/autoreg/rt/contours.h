// Contours extracted from a volume on a series' grid, slice by slice: what an ROI warped
// onto another scan (as a mask or a signed distance) becomes in an RTSTRUCT (write.h).
#pragma once

#include <cstdint>
#include <vector>

#include "autoreg/rt/series.h"
#include "autoreg/rt/structure_set.h"

namespace autoreg::rt {

// The closed contours of { value >= level } on each slice k of `series.grid`, by marching
// squares on the voxel centres' values (`values`: voxel_count(grid) floats in grid.h's
// order): a warped mask in 0..1 with level 0.5, or a signed distance that is positive
// inside (negate one that is negative inside) with level 0. Edges crossed are placed by linear interpolation; a
// cell whose corners alternate (a saddle) is resolved by its centre value (the corners'
// mean), the same on both sides of every edge, so loops never cross themselves or each
// other. Voxels beyond the grid count as below the level: a structure that touches the
// grid's edge is closed half a voxel beyond the outermost voxel centres (clipped to the
// image's extent). Loops of fewer than 3 points or enclosing less than a quarter voxel
// are dropped; points on a straight line between their neighbours are removed. Points
// are in LPS mm on the slice's plane; each contour references slices[k]'s SOP instance
// UID. Throws std::invalid_argument when the series has no slice per k or a value is
// not finite.
std::vector<Contour> contours_from_volume(const float* values, const DicomSeries& series, double level);

// How many voxels of the grid's outermost layer (first and last column, row and slice)
// are at or above `level`: non-zero when a structure was cut by the edge of the image,
// which contours_from_volume closes along the edge (for the caller's report).
int64_t voxels_on_border(const float* values, const Grid& grid, double level);

}  // namespace autoreg::rt
