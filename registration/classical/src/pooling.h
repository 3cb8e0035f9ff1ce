// Internal to registration/classical: the average pooling that makes an image pyramid,
// shared by instance optimisation's levels and the discrete search's grid.
#pragma once

#include <ATen/ATen.h>

#include <algorithm>
#include <array>
#include <cstdint>

namespace autoreg::registration::detail {

using Factors = std::array<int64_t, 3>;  // along D, H, W

// Average pooling by `factor` per axis (a no-op for 1), at most the axis's length (a
// small volume at a coarse level keeps one voxel); partial blocks at the far faces are
// averaged over what they hold.
inline at::Tensor downsample(const at::Tensor& image, Factors f) {
  for (int d = 0; d < 3; ++d) f[d] = std::min(f[d], image.size(2 + d));
  if (f[0] == 1 && f[1] == 1 && f[2] == 1) return image;
  return at::avg_pool3d(image, {f[0], f[1], f[2]}, {f[0], f[1], f[2]}, {0, 0, 0},
                        /*ceil_mode=*/true, /*count_include_pad=*/false);
}

}  // namespace autoreg::registration::detail
