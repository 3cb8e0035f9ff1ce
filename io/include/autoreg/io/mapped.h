// Sampling and composing through a map given as an affine and a displacement field,
// without per-voxel coordinate tensors: every voxel p of a target grid is carried to
// the physical point A·x(p + u(p)), where x(·) is the target's index-to-world map, u a
// displacement in the target's voxels (1×3×D×H×W, channels k, j, i, as in ops/) and A a
// 4×4 world → world affine. One pass per output, parallel over rows; what
// sample_at(volume, transform_points(A, physical_points(target) + voxel_to_physical(u,
// target))) computes, with none of its five volume-sized temporaries (for a
// 256×256×160 pair's image and labels: 0.3–0.4 s against 2.2 s in register,
// 0.54 s against 3.0 s in autoreg_bench_io).
#pragma once

#include <ATen/core/Tensor.h>

#include "autoreg/io/grid.h"
#include "autoreg/io/volume.h"

namespace autoreg::io {

// The volume's values at the points A·x(p + u(p)) of `target`'s voxels: trilinear for
// float32 data (any number of channels, 1×C×…), nearest neighbour for int32 label maps;
// the border rule of sample_at (within half a voxel outside the outermost centres the
// border value, farther out 0; with Outside::Border, the nearest point's value
// everywhere). `affine` (4×4) or `displacement` may be undefined (identity, zero).
// Returns 1×C×D×H×W of the volume's dtype on the target grid.
at::Tensor sample_mapped(const Volume& volume, const Geometry& target, const at::Tensor& affine,
                         const at::Tensor& displacement, Outside outside = Outside::Zero);

// The displacement, in voxels of `grid` (1×3×D×H×W float32), of the map
// p ↦ x⁻¹(A·x(p + u(p))): the affine after the deformation, as one field on the grid.
at::Tensor compose_affine(const Geometry& grid, const at::Tensor& affine, const at::Tensor& displacement);
// The same, written over `displacement` (float32, CPU; made contiguous first if it is
// not), which is returned: no second volume-sized field.
at::Tensor compose_affine_(const Geometry& grid, const at::Tensor& affine, at::Tensor displacement);

// The inverse of the map p ↦ x_f⁻¹(A·x_f(p + u(p))) (compose_affine on `fixed_grid`) as a
// displacement in voxels of `moving_grid` (1×3×…): a moving voxel q goes back to the fixed
// point z = A⁻¹·x_m(q), then through `inverse_displacement` (1×3×… float32 on the fixed grid,
// fixed voxels: the deformable part's inverse, sampled trilinearly, border values
// outside). Undefined `inverse_displacement`: the affine's inverse alone.
at::Tensor inverse_map(const Geometry& moving_grid, const Geometry& fixed_grid, const at::Tensor& affine,
                       const at::Tensor& inverse_displacement);

// Per fixed voxel, how far in mm the round trip through the forward map (`forward`, fixed
// voxels on `fixed_grid`) and then the inverse map (`inverse`, moving voxels on
// `moving_grid`) lands from where it started: |x + d(x) + d⁻¹(x + d(x)) − x| in physical
// space, 1×1×D×H×W float32.
at::Tensor round_trip_error_mm(const Geometry& fixed_grid, const at::Tensor& forward, const Geometry& moving_grid,
                               const at::Tensor& inverse);

}  // namespace autoreg::io
