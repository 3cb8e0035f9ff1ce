// Registration quality: overlap of label maps, surface distances, and the regularity
// of a displacement field. Plain tensors in, numbers out (no ITK).
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>
#include <vector>

namespace autoreg::registration {

// Dice 2|A∩B| / (|A| + |B|) of label `label` in two label maps of one grid (any integer
// or float dtype, any shape). 1 when the label is absent from both.
double dice(const at::Tensor& a, const at::Tensor& b, int64_t label);

// 95th percentile Hausdorff distance in mm between the surfaces of label `label` in two
// 1×1×D×H×W label maps: the larger of the two directed 95th percentiles of the distances
// from each surface voxel (a label voxel with a 6-neighbour outside the label or the
// volume) to the nearest surface voxel of the other map. Exact Euclidean distances
// with `spacing` (mm along D, H, W). NaN when the label is absent from either map.
double hd95(const at::Tensor& a, const at::Tensor& b, int64_t label,
            const std::array<double, 3>& spacing_dhw);

// Folding and smoothness of x ↦ x + u(x), u: 1×3×D×H×W in voxels.
struct JacobianStats {
  double non_positive_percent;  // % of voxels with det ≤ 0
  double log_std;               // standard deviation of log(det) over voxels with det > 0
};
JacobianStats jacobian_stats(const at::Tensor& displacement);

// Mean Dice over the label values (not 0) present in both maps (int label maps of one
// shape); NaN when they share none.
double mean_dice(const at::Tensor& a, const at::Tensor& b);

// Mean Dice over every label value (not 0) of `reference`: a label the other map lacks
// scores 0 (what a segmentation or a registration is judged by against a manual map).
// Both int label maps of one number of voxels; one pass over them for all labels. NaN
// when `reference` holds no label.
double mean_dice_over_reference(const at::Tensor& reference, const at::Tensor& other);

// The label values (other than 0, the background) present in either map, ascending.
std::vector<int64_t> labels_present(const at::Tensor& a, const at::Tensor& b);

}  // namespace autoreg::registration
