// The local search of joint label fusion (Wang et al. 2013, §2.3; ANTs' -s): each atlas
// is read, at every voxel, where its patch best matches the target's patch within a small
// neighbourhood, which corrects what registration left misaligned by a voxel or two.
#pragma once

#include <ATen/core/Tensor.h>

#include <utility>

namespace autoreg::segmentation::detail {

// For every voxel x of `target` (D×H×W, local z-scores), the offset o within ±`search`
// voxels along each axis whose (2r+1)³ patch of `atlas` (D×H×W z-scores, the same grid)
// is closest to the target's patch around x (least mean squared difference; the
// smallest |o| wins ties, so flat regions keep o = 0); reads outside the volume take
// the nearest face voxel. Returns the atlas's z-scores and `labels` (D×H×W integer)
// read at x + o(x): {float D×H×W, int32 D×H×W}.
std::pair<at::Tensor, at::Tensor> match(const at::Tensor& target, const at::Tensor& atlas, const at::Tensor& labels,
                                        int search, int r);

}  // namespace autoreg::segmentation::detail
