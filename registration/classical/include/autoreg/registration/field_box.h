// Helpers for a displacement field computed on the foreground box of a pair: the box,
// cropping to it, and the field brought back to the whole grid (instance optimisation
// works on the box; the model frame is centred on it). Tensors only, no image geometry.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>

namespace autoreg::registration {

// Per tensor dimension (D, H, W): [begin, end).
using Box = std::array<std::array<int64_t, 2>, 3>;

// The box holding every voxel where either image (normalised to [0, 1]) exceeds 0.02,
// with `margin` voxels to spare, clipped to the volume; the whole volume when both are
// empty.
Box foreground_box(const at::Tensor& a, const at::Tensor& b, int64_t margin);
at::Tensor crop(const at::Tensor& t, const Box& box);  // contiguous
// A field computed on the box, extended outside it by its border values.
at::Tensor uncrop_replicate(const at::Tensor& inside, const Box& box, at::IntArrayRef full_size);

// A displacement fitted on the box at half resolution (`coarse`: 1×3×m×…, m = (n + 1) / 2
// for a box side of n, in voxels of that grid; registration::fit_half_displacement)
// brought to the full grid in one pass: r = the trilinear upsampling (corners aligned,
// vectors rescaled to full voxels), continued outside the box by its face values. With
// `then` (1×3×D×H×W float32, full voxels) the result is r followed by it,
// r(x) + then(x + r(x)) (trilinear, border values outside): ops::compose(then, r)
// without r ever held at full size. Returns 1×3×D×H×W float32 on the CPU.
at::Tensor expand_field(const at::Tensor& coarse, const Box& box, at::IntArrayRef full_size,
                        const at::Tensor& then = at::Tensor());

}  // namespace autoreg::registration
