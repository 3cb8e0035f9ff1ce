// Grids: comparing them, resampling a volume onto another grid, and intensity
// normalisation.
#pragma once

#include <ATen/core/Tensor.h>

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

// Robust intensity normalisation: the `lower` and `upper` percentiles of the voxel
// values map to 0 and 1, and values beyond are clipped. Defaults ignore outliers
// (bright vessels, dark background noise) without a mask.
at::Tensor normalize_intensity(const at::Tensor& data, double lower_percent = 0.5,
                               double upper_percent = 99.5);

}  // namespace autoreg::io
