// A structure's mask carried from the moving grid onto the fixed one within boxes: the
// moving voxels it covers, and the fixed voxels whose map can reach them (contours_job.cpp).
// A CBCT's grid holds 27 million voxels and a structure a few per cent of them.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>
#include <vector>

#include "autoreg/io/volume.h"
#include "autoreg/rt/series.h"

namespace autoreg::pipeline::detail {

// Voxels [lo, hi) along i, j, k.
struct Box {
  std::array<int64_t, 3> lo{0, 0, 0}, hi{0, 0, 0};
  bool empty() const { return hi[0] <= lo[0] || hi[1] <= lo[1] || hi[2] <= lo[2]; }
};

// A mask's set voxels with two voxels around (empty box: none set), and the box as a
// float volume of its own.
struct MovingBox {
  Box box;
  io::Volume volume;
  int64_t voxels = 0;  // set in the mask
};
MovingBox moving_box(const std::vector<uint8_t>& mask, const io::Geometry& grid);

// Values on a box of the fixed grid (1×1×d×h×w float32); zero elsewhere.
struct OnBox {
  Box box;
  at::Tensor values;
};

// The moving box sampled (trilinear) through `displacement` (1×3×D×H×W voxels of the
// fixed grid, channels k, j, i; undefined: the headers alone) on the fixed voxels whose
// map, moving no voxel farther than `reach` along i, j, k, can land in it.
OnBox sampled_on_box(const MovingBox& part, const rt::Grid& moving, const rt::Grid& fixed, const io::Geometry& fixed_grid,
                     const std::array<double, 3>& reach, const at::Tensor& displacement);

// The values ≥ 0.5 as a mask of the whole fixed grid (rt/'s order).
std::vector<uint8_t> half_on_grid(const OnBox& on, const io::Geometry& fixed_grid);

// The series cut to the box: its grid's origin moved to the box's first voxel, its slices
// those of the box.
rt::DicomSeries cropped_series(const rt::DicomSeries& series, const Box& box);

}  // namespace autoreg::pipeline::detail
