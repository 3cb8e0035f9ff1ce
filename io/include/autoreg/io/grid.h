// Grids: comparing them, resampling a volume onto another grid, and intensity
// normalisation.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <optional>
#include <string>

#include "autoreg/io/volume.h"

namespace autoreg::io {

// Same size, and spacing, origin and direction equal within `tolerance` (mm, or
// direction-cosine units).
bool same_grid(const Geometry& a, const Geometry& b, double tolerance = 1e-4);

enum class Resampling {
  Linear,   // trilinear, for intensities
  Nearest,  // nearest neighbour, for label maps
};

// The volume seen on `reference`'s grid: each reference voxel takes the value at its
// physical point (identity mapping in LPS millimetres); points outside read 0. A volume
// already on that grid is returned as it is.
Volume resample(const Volume& volume, const Geometry& reference, Resampling how);

// The 4×4 float64 matrix taking a homogeneous voxel index (i, j, k, 1) to physical
// LPS millimetres: [Direction · diag(spacing) | origin].
at::Tensor index_to_world(const Geometry& grid);

// The physical position (LPS mm) of every voxel of `grid`: 1×3×D×H×W float32,
// channels x, y, z.
at::Tensor physical_points(const Geometry& grid);

// The volume's values at arbitrary physical points (1×3×D×H×W, LPS mm, e.g. x + d(x)
// for a displacement field d on the fixed grid), in one interpolation: trilinear for
// intensities (float32), nearest neighbour for label maps (int32). The volume is its
// voxels' extent, as in ITK: a point within half a voxel outside the outermost voxel
// centres reads the border value, a point farther out reads 0 (ITK's ResampleImageFilter
// with a linear or nearest-neighbour interpolator gives the same values). The volume's
// data may have C channels (1×C×…: a vector field), sampled alike. Returns 1×C×D×H×W of
// the volume's dtype.
at::Tensor sample_at(const Volume& volume, const at::Tensor& points);

// What a point farther than half a voxel outside a volume reads: 0 (ITK's rule, for
// images), or the value at the nearest point of the volume (a field known on a box and
// continued outside it by its face values: no jump, so no folding, at the faces).
enum class Outside { Zero, Border };

// sample_at(volume, physical_points(target)) (trilinear, float32, 1×C×D×H×W; same border
// rule) when the two grids' axes are parallel — each axis of `target` along plus or minus
// one axis of the volume, as for a model frame and the fixed grid it was placed on —
// computed separably, one pass per axis (a 3-channel 80×80×96 field onto 256×256×160:
// 0.27 s against grid_sampler's 1.65 s, warm), and no per-voxel coordinates held.
// std::nullopt when the axes are not parallel (oblique).
std::optional<at::Tensor> sample_on_parallel_grid(const Volume& volume, const Geometry& target,
                                                  Outside outside = Outside::Zero);

// The geometry with the directions of its axes replaced by an orientation code: three
// letters from R/L, A/P, S/I, one per axis, naming where each voxel axis points to (as
// FreeSurfer's mri_convert --in_orientation and nibabel do: "LIA" = i towards Left,
// j towards Inferior, k towards Anterior). The physical centre of the volume stays where
// it was. For headers that are wrong about orientation. Throws std::invalid_argument
// for a malformed code.
Geometry with_orientation(const Geometry& grid, const std::string& code);

// The orientation code nearest to the grid's axes (with_orientation's letters): for an
// oblique grid, the assignment of anatomical directions to voxel axes with the largest
// total |cosine|. Inverse of with_orientation on grids that are not oblique.
std::string orientation_code(const Geometry& grid);

// The `lower` and `upper` percentiles of the voxel values (of the voxels inside `mask`,
// when given: the data's shape, non-zero inside), from a subsample of at most a million.
std::array<double, 2> intensity_percentiles(const at::Tensor& data, double lower_percent, double upper_percent,
                                            const at::Tensor& mask = {});

// Robust intensity normalisation: the `lower` and `upper` percentiles of the voxel
// values map to 0 and 1, and values beyond are clipped. Defaults ignore outliers
// (bright vessels, dark background noise) without a mask. With a `mask` (the data's
// shape, non-zero inside), the percentiles are those of the voxels inside it.
at::Tensor normalize_intensity(const at::Tensor& data, double lower_percent = 0.5,
                               double upper_percent = 99.5, const at::Tensor& mask = {});
// The values lo..hi mapped to 0..1, clipped beyond (a constant 0 when hi <= lo).
at::Tensor normalize_window(const at::Tensor& data, double lo, double hi);

}  // namespace autoreg::io
