// A discrete search for large motion before instance optimisation (the first stage of
// ConvexAdam, Siebert, Hansen & Heinrich, MICCAI 2021): MIND-SSC descriptors of both
// images on a coarse grid, the cost of every displacement in a window set in
// millimetres (a cost volume), and a coupled convex optimisation that alternates the
// best displacement of each voxel given a smooth field near it and the smoothing of
// those. Gradient descent from zero follows the nearest match, which for 2 cm of
// breathing motion can be the wrong vessel; the search looks at every candidate.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>

namespace autoreg::registration {

struct DiscreteOptions {
  // The largest displacement searched along each axis, mm; each axis gets the nearest
  // whole number of grid voxels (at most kMaxDiscreteRadius).
  double radius_mm = 20;
  double grid_mm = 4;                        // the coarse grid's voxel size (about), mm
  std::array<double, 3> spacing{1, 1, 1};    // the images' voxel size along D, H, W, mm
  // The coupling weights θ of the alternation, in cost units per squared grid voxel,
  // each an iteration (ConvexAdam's schedule, rescaled to our cost's range).
  std::array<double, 5> coupling{0, 0.001, 0.003, 0.01, 0.03};
  // The cost volume's memory at most, MiB (one float per candidate and grid voxel): a
  // volume whose cost does not fit is searched in slabs of slices, each computed again
  // at every step of the coupling (about five times the search's time); a slab holds at
  // least three slices (one and its two neighbours), whatever the limit.
  int64_t max_cost_mib = 1024;
};

// Grid voxels searched along an axis at most: (2r+1)³ candidates, the cost volume's depth.
inline constexpr int64_t kMaxDiscreteRadius = 6;

// The displacement u (1×3×D×H×W, voxels of the images' grid, channel c along tensor
// dimension c) such that moving(x + u(x)) ≈ fixed(x), found by the search; fixed, moving:
// 1×1×D×H×W on one grid, intensities normalised to about [0, 1]; `fixed_mask` (optional,
// like the images): where the fixed image has no data (its field of view), the cost is
// left out and the field is the smoothing's. CPU or CUDA.
at::Tensor discrete_displacement(const at::Tensor& fixed, const at::Tensor& moving, const DiscreteOptions& options,
                                 const at::Tensor& fixed_mask = {});

}  // namespace autoreg::registration
