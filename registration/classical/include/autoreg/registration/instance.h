// Instance optimisation: a diffeomorphic displacement fitted directly to one pair, the
// register command's method when no trained model is given (and, later, the refinement
// after a network's prediction).
//
// The field is a stationary velocity field at half resolution, integrated by scaling
// and squaring and upsampled ×2; it is fitted coarse to fine (image pyramids, by default
// at 1/4 and 1/2 resolution) by Adam on similarity + λ·smoothness through the operators'
// autograd.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "autoreg/registration/regularization.h"
#include "autoreg/registration/similarity.h"

namespace autoreg::registration {

struct InstanceOptions {
  Similarity similarity = Similarity::Ncc;   // local NCC (windows 5 and 7), MSE or MIND-SSC
  // The smoothness term (regularization.h: diffusion, or total variation where organs
  // slide) and its weight λ; the velocity's gradient is taken in physical units.
  Regularizer regularizer = Regularizer::Diffusion;
  double regularization = 1.0;
  // Adam steps per level, coarse to fine: the last level is at 1/2 resolution and each
  // level before it halves again (two: 1/4, 1/2; four: 1/16, 1/8, 1/4, 1/2, for motion
  // of several centimetres), and Adam's step in half-resolution voxels: on the
  // validation pairs 06↔07 (3 squarings), 70 and 20 steps of 0.15 gave Dice
  // 0.595/0.591, 100 and 25 of 0.1 0.593/0.590, 50 and 15 of 0.2 0.592/0.589.
  std::vector<int64_t> iterations = {70, 20};
  double learning_rate = 0.15;
  // The finest level compares the images at full resolution (the velocity stays on the
  // half-resolution grid, upsampled at each step): the detail of thin-slice in-plane
  // structure (liver vessels at 1.37 mm) that the half-resolution images lose, at about
  // twice the time on the liver slabs (many times on a 1 mm brain).
  bool full_resolution = false;
  // Each level before the finest compares the images pooled as the level this many
  // levels finer (at most the half-resolution grid), its velocity staying on its own
  // grid and upsampled at each step, with windows of 9 voxels of the finer grid (7 where
  // it is under 3 times finer): the coarse levels follow centimetres of motion by the
  // vessels of finer images instead of blobs pooled over 3 cm, as pTVreg's knots every
  // 4 voxels do. On the liver pairs, 2 took the mean TRE inside the liver from 2.26 to
  // 1.93 mm (docs/beyond-brains.md). 0: each level compares its own grid.
  int compare_finer = 0;
  // The local NCC window in millimetres along each axis (odd numbers of each level's
  // voxels, at least 3), the same physical neighbourhood at every level and on thick
  // slices; 0: 5 voxels of each level's grid along every axis, 7 at the finest.
  double window_mm = 0;
  // Squarings of the velocity: 3 (on the validation pairs 06↔07, Dice 0.593/0.590 with
  // 3, 0.592/0.589 with 4 and 5; no folding with any; the deformable stage of 07→06
  // 9.7 s with 5, 7.1 s with 3).
  int64_t integration_steps = 3;
  uint64_t seed = 0;
  // The voxel spacing along D, H, W (mm), when known: the pyramid is planned per axis
  // (pyramid_factors). Unset: every axis shrinks alike.
  std::array<double, 3> spacing{0, 0, 0};
  // Cost-function masks, optional: 1×1×D×H×W like the images, 1 inside and 0 outside.
  // Only voxels inside the fixed mask whose match (through the current field) lies inside
  // the moving mask count in the similarity; the field is still fitted everywhere, smooth
  // across what the masks leave out. The moving one is on the grid of the moving image
  // given here (the fixed grid, after the affine).
  at::Tensor fixed_mask, moving_mask;
  // Where the fit starts (optional): a velocity, 1×3×d×h×w in voxels of its own grid
  // (any grid: it is resampled to the first level's), such as a discrete search's
  // displacement (for a smooth field the two are about equal). The smoothness then acts
  // on the whole field, the start included, so where the images are flat (air, a
  // uniform organ) the fit follows its neighbours rather than keeping the start, as
  // ConvexAdam's Adam stage does. Empty: zero.
  at::Tensor initial_velocity;
  // Called after every iteration: level (0-based), iteration, loss.
  std::function<void(int, int64_t, double)> progress;
};

// The pyramid's shrink factors along D, H, W for each of `levels` levels, coarse to fine,
// and last the half-resolution grid's (the velocity's): level l of L shrinks every axis
// by 2^(L−l), the half-resolution grid by 2, when the axes' spacings are within 1.5× of
// each other (4, 2 and 2 for two levels, as always). With thicker slices than that, each
// level's voxels are made as near cubes as the axes allow, of the volume the even shrink
// would give them (side: the shrink × the geometric mean spacing): a 1.37×1.37×4 mm slab
// keeps its slices on the half-resolution grid (1, 3, 3), and a 0.43×0.43×2.5 mm T2 is
// not worked on at 0.86 mm in plane but at 1.7 mm (4, 4, 1), at no more cost.
std::vector<std::array<int64_t, 3>> pyramid_factors(size_t levels, const std::array<double, 3>& spacing);

// Fits x ↦ x + u(x) such that moving(x + u(x)) ≈ fixed(x). fixed, moving: 1×1×D×H×W on
// one grid, intensities normalised to about [0, 1]. Returns u, 1×3×D×H×W in voxels.
at::Tensor fit_displacement(const at::Tensor& fixed, const at::Tensor& moving,
                            const InstanceOptions& options = {});

// The same field before its upsampling: on the half-resolution grid ((n + 1) / 2
// voxels along an axis of n; n along an axis the plan does not shrink), in voxels of that grid; fit_displacement upsamples it
// trilinearly (corners aligned). For callers that fuse the upsampling with what follows.
at::Tensor fit_half_displacement(const at::Tensor& fixed, const at::Tensor& moving,
                                 const InstanceOptions& options = {});
// The stationary velocity behind it, on the same half-resolution grid:
// fit_half_displacement = ops::integrate(v, options.integration_steps), and
// ops::integrate(-v, ...) is the displacement of its inverse map.
at::Tensor fit_half_velocity(const at::Tensor& fixed, const at::Tensor& moving,
                             const InstanceOptions& options = {});

}  // namespace autoreg::registration
