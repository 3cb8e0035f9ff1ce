// Training-time data: random smooth deformations and intensity changes (augmentation),
// and synthetic images generated from label maps (so that a model can be trained from few
// real subjects, as SynthMorph does).
// Randomness comes from torch's default generator (seeded per training step).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace autoreg::registration {

// A random smooth displacement on a D×H×W grid (1×3×D×H×W, voxels): Gaussian values on a
// coarse lattice of `control_points`³ points, upsampled trilinearly, scaled so that their
// standard deviation is `sigma_voxels`.
at::Tensor random_smooth_field(at::IntArrayRef size, double sigma_voxels, int64_t control_points = 5);

// Random intensity change of an image in [0, 1]: gamma exp(N(0, 0.25²)), gain U(0.9, 1.1),
// a smooth multiplicative bias field (±10 %), Gaussian noise σ 0.01; clipped to [0, 1].
at::Tensor augment_intensity(const at::Tensor& image);

// The mean intensity of each label value over image/label pairs (int32 label maps):
// a table indexed by label value, −1 where a value was never seen.
at::Tensor label_intensity_table(const std::vector<at::Tensor>& images,
                                 const std::vector<at::Tensor>& labels);

// A synthetic image of a label map: each label takes its table intensity (labels not in
// the table, or at −1, stay dark, as after skull stripping) times a random factor
// U(0.85, 1.15), plus noise, blurred by a 3³ box, then augment_intensity. 1×1×D×H×W float.
at::Tensor synthesize_image(const at::Tensor& labels, const at::Tensor& table);

}  // namespace autoreg::registration
