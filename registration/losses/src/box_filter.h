// Internal to registration/: the clipped box mean of local NCC and MIND on the CPU as
// running sums (O(1) per voxel whatever the window) with its adjoint for autograd.
// avg_pool3d's CPU kernel loops over the window for every voxel and was a quarter of
// an instance-optimisation step (forward and backward).
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>

namespace autoreg::registration::detail {

using Window = std::array<int64_t, 3>;  // voxels along D, H, W (odd)

// Mean over a box of window[0]×window[1]×window[2] (odd) voxels centred on each voxel,
// clipped at the borders: three 1-D clipped means along D, then H, then W (what
// avg_pool3d with count_include_pad off computes pass by pass). t: N×C×D×H×W float32 on
// the CPU. Differentiable (first order).
at::Tensor fast_box_mean(const at::Tensor& t, const Window& window);
// The cubic box of `window` voxels along every axis.
at::Tensor fast_box_mean(const at::Tensor& t, int64_t window);

}  // namespace autoreg::registration::detail
