// Local statistics over (2r+1)³ boxes, for label fusion's patch similarities.
#pragma once

#include <ATen/core/Tensor.h>

namespace autoreg::segmentation::detail {

// The mean of x (D×H×W, float) over the (2r+1)³ box around each voxel; voxels outside
// the volume are not counted (a box at the border averages what it holds). Three
// separable passes.
at::Tensor box_mean(const at::Tensor& x, int r);

// x's local z-score: (x − box mean) / sqrt(box variance + ε²). ε keeps flat regions
// near 0 instead of blowing their noise up; fusion uses a hundredth of the whole image's
// value range (the same in every slab). `center` (fusion: the whole image's mean) is
// subtracted first, so that the variance E[x²] − E[x]² does not cancel away in float.
at::Tensor local_zscore(const at::Tensor& x, int r, double center, double eps);

}  // namespace autoreg::segmentation::detail
