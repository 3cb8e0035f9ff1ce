// Warping a volume read from a file, shared by the subcommands.
#pragma once

#include <ATen/ATen.h>

#include "autoreg/io/volume.h"
#include "autoreg/ops.h"

namespace autoreg::apps {

// The volume (already on u's grid) pulled back through u: trilinear for intensities
// (float32), nearest for label maps (int32, sampled as float32: exact for |label| < 2^24).
// Outside the moving volume: zero.
inline at::Tensor warp_volume(const io::Volume& v, const at::Tensor& u) {
  const bool labels = v.data.scalar_type() == at::kInt;
  const at::Tensor warped =
      ops::warp(v.data.to(at::kFloat), u,
                labels ? ops::Interpolation::Nearest : ops::Interpolation::Linear, ops::Padding::Zeros);
  return labels ? warped.round().to(at::kInt) : warped;
}

}  // namespace autoreg::apps
