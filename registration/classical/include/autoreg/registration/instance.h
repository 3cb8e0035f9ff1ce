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
  // Per level, 1/4 then 1/2 resolution, and Adam's step in half-resolution voxels: on
  // the validation pairs 06↔07 (3 squarings), 70 and 20 steps of 0.15 gave Dice
  // 0.595/0.591, 100 and 25 of 0.1 0.593/0.590, 50 and 15 of 0.2 0.592/0.589.
  std::vector<int64_t> iterations = {70, 20};
  double learning_rate = 0.15;
  // Squarings of the velocity: 3 (on the validation pairs 06↔07, Dice 0.593/0.590 with
  // 3, 0.592/0.589 with 4 and 5; no folding with any; the deformable stage of 07→06
  // 9.7 s with 5, 7.1 s with 3).
  int64_t integration_steps = 3;
  uint64_t seed = 0;
  // Called after every iteration: level (0-based), iteration, loss.
  std::function<void(int, int64_t, double)> progress;
};

// Fits x ↦ x + u(x) such that moving(x + u(x)) ≈ fixed(x). fixed, moving: 1×1×D×H×W on
// one grid, intensities normalised to about [0, 1]. Returns u, 1×3×D×H×W in voxels.
at::Tensor fit_displacement(const at::Tensor& fixed, const at::Tensor& moving,
                            const InstanceOptions& options = {});

// The same field before its upsampling: on the half-resolution grid ((n + 1) / 2
// voxels along an axis of n), in voxels of that grid; fit_displacement upsamples it
// trilinearly (corners aligned). For callers that fuse the upsampling with what follows.
at::Tensor fit_half_displacement(const at::Tensor& fixed, const at::Tensor& moving,
                                 const InstanceOptions& options = {});
// The stationary velocity behind it, on the same half-resolution grid:
// fit_half_displacement = ops::integrate(v, options.integration_steps), and
// ops::integrate(-v, ...) is the displacement of its inverse map.
at::Tensor fit_half_velocity(const at::Tensor& fixed, const at::Tensor& moving,
                             const InstanceOptions& options = {});

}  // namespace autoreg::registration
