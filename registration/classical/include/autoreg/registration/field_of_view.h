// A scan's field of view: the voxels that hold measurements, as opposed to the constant
// padding a scanner or a resampling writes around them (a cone-beam CT's cylinder at
// −1000 on a planning CT's grid; a CT cropped to its reconstruction circle at −3024 or
// −2048). Padding is not dark anatomy: a similarity that compares it pulls one image
// onto the edge of the other's field of view (a planning CT turned 30° and scaled to
// fit a CBCT's cylinder, Dice 0.44 → 0.00). Registration compares only the voxels inside
// both fields of view (pipeline::register_pair), as elastix does with masks.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <optional>

namespace autoreg::registration {

// What finding the padding found: its value, and the fraction of the grid outside the
// field of view (0 and no value when nothing was found).
struct FieldOfView {
  at::Tensor inside;             // 1×1×D×H×W float32, 1 inside the field of view; undefined: all of it
  std::optional<double> padding;  // the padding value found or given
  double outside_fraction = 0;   // of the grid's voxels
};

// The voxels connected (6-neighbourhood) to the grid's faces through voxels equal to the
// padding value are outside the field of view; everything else is inside (air inside a
// CBCT's cylinder, bowel gas, a skull-stripped brain's interior).
// - `padding` given: that value (an MR crop's 0, say).
// - not given (automatic): the image's minimum, when it is Hounsfield-like padding (at
//   or below −500) and an isolated spike of the histogram: fewer than 5 % as many voxels
//   lie just above it (within 1 % of the intensity range) as on it. Clamped air in a CT
//   (−1000 exactly on a quarter of a planning CT, with as many voxels at −999 … −970) is
//   anatomy's edge, not padding, and is kept; so is every MR image's background (its
//   minimum is not below −500), which leaves brains and abdominal MR as they were.
// Found only when at least 1 % of the grid is outside and something is inside.
// `data`: 1×1×D×H×W, the raw intensities (before normalisation), on the CPU.
FieldOfView field_of_view(const at::Tensor& data, std::optional<double> padding = std::nullopt);

// The part of a field of view `margin_mm` or more inside its edge (1×1×D×H×W float32, 1
// inside): where a pre-alignment is judged, so that one which gains only by pulling an
// image's edge onto the other's field of view (a planning CT stretched by 18 % onto a
// CBCT's cylinder) gains nothing there. `spacing`: mm along the tensor's D, H, W (ITK's
// k, j, i). The outside is grown as a box on a grid of about 3 mm: the margin is at least
// `margin_mm`, at most a cell more along an axis and up to √3 times that diagonally.
at::Tensor away_from_edge(const at::Tensor& inside, const std::array<double, 3>& spacing, double margin_mm);

// Gas inside a body (bowel gas, the stomach's): the voxels below `threshold` that are not
// connected (6-neighbourhood) to the grid's faces through voxels below it, as the air
// around a body and a CBCT's padding are; grown by `grow_mm` along each axis (at least a
// voxel where the spacing allows: the pocket's blurred rim). Gas in one scan and not in
// the other is no anatomy to follow: a similarity that compares it pulls the bowel's wall
// onto the day's gas. 1×1×D×H×W float32, 1 on gas. `data`: raw intensities, 1×1×D×H×W;
// `spacing` along D, H, W.
at::Tensor enclosed_gas(const at::Tensor& data, double threshold, const std::array<double, 3>& spacing, double grow_mm);

}  // namespace autoreg::registration
