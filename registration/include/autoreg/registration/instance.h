// Instance optimisation: a diffeomorphic displacement fitted directly to one pair, the
// register command's method when no trained model is given (and, later, the refinement
// after a network's prediction).
//
// The field is a stationary velocity field at half resolution, integrated by scaling
// and squaring and upsampled ×2; it is fitted coarse to fine (image pyramids at 1/4 and
// 1/2 resolution) by Adam on similarity + λ·smoothness through the operators' autograd.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace autoreg::registration {

struct InstanceOptions {
  std::string similarity = "ncc";            // "ncc" (local, windows 5 and 7), "mse" or "mind"
  double regularization = 1.0;               // λ on the mean squared velocity gradient
  std::vector<int64_t> iterations = {100, 25};  // per level: 1/4, then 1/2 resolution
  double learning_rate = 0.1;                // Adam, in half-resolution voxels per step
  int64_t integration_steps = 5;
  uint64_t seed = 0;
  // Called after every iteration: level (0-based), iteration, loss.
  std::function<void(int, int64_t, double)> progress;
};

// Fits x ↦ x + u(x) such that moving(x + u(x)) ≈ fixed(x). fixed, moving: 1×1×D×H×W on
// one grid, intensities normalised to about [0, 1]. Returns u, 1×3×D×H×W in voxels.
at::Tensor fit_displacement(const at::Tensor& fixed, const at::Tensor& moving,
                            const InstanceOptions& options = {});

}  // namespace autoreg::registration
