// Affine pre-alignment of two volumes in physical space, before the deformable step.
//
// Works on any grids: each volume comes with its index-to-world matrix (voxel index
// (i, j, k) of tensor element [k][j][i] → world millimetres), so volumes in native
// scanner space, in any orientation and resolution, are aligned without resampling them
// first. Initialisation by image moments (centre of mass; principal axes as candidate
// rotations, kept only when they match better than the headers' own orientation), then
// multi-resolution optimisation of the 12 affine parameters by Adam on a similarity
// loss at random points (global NCC, MSE, or mutual information when the similarity is
// "mind", i.e. different modalities), through grid sampling's autograd.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "autoreg/registration/similarity.h"

namespace autoreg::registration {

struct AffineOptions {
  Similarity similarity = Similarity::Ncc;       // global NCC, MSE, or (Mind) mutual information
  std::vector<double> level_spacing = {4.0, 2.0};  // mm per voxel of each pyramid level
  std::vector<int64_t> iterations = {150, 100};  // Adam steps per level
  double learning_rate = 1.0;                    // mm per step at the coarsest level
  bool principal_axes = true;                    // also try principal-axes rotations
  int64_t candidate_iterations = 30;             // steps a candidate start gets before choosing
  int64_t samples = 20000;                       // random fixed points compared per step
  uint64_t seed = 0;                             // of the point sampling
  // 6 degrees of freedom (rotation and translation) instead of 12: the same patient's
  // scans, where shear and scale would only follow an organ that moves within the body
  // (Adam on a rotation vector and the translation).
  bool rigid = false;
  // Cost-function masks, optional: 1×1×D×H×W on the fixed and on the moving volume's own
  // grid, 1 inside and 0 outside. Only fixed points inside the fixed mask, and of those
  // only the ones that map inside the moving mask, are compared; the moments that start
  // the search are those of the masked images.
  at::Tensor fixed_mask, moving_mask;
  // Called after every step: level (0-based), step, loss.
  std::function<void(int, int64_t, double)> progress;
};

// What the affine stage found, besides its matrix: its loss on every point of the finest
// level, and the headers' own alignment's (the identity) on the same points. A fit wins
// by the measure it optimised even where the content does not support it (a planning CT
// turned 23° onto a CBCT that the clinic had aligned), so pipeline::register_pair judges
// it by another (the deformable stage's local similarity) and drops it when it does not
// help.
struct AffineReport {
  double fitted_loss = 0, headers_loss = 0;
};

// 4×4 float64 matrix A (world → world) such that moving(A·x) ≈ fixed(x) for world points
// x of the fixed volume. fixed, moving: 1×1×D×H×W, intensities normalised to about
// [0, 1]; *_index_to_world: 4×4 float64 (homogeneous index (i, j, k, 1) → world).
at::Tensor fit_affine(const at::Tensor& fixed, const at::Tensor& fixed_index_to_world,
                      const at::Tensor& moving, const at::Tensor& moving_index_to_world,
                      const AffineOptions& options = {}, AffineReport* report = nullptr);

// The moments initialisation alone: maps the fixed image's centre of mass onto the
// moving one's, scaled about it by the isotropic factor that equalises the volumes of
// the two mass distributions (no rotation).
at::Tensor moments_affine(const at::Tensor& fixed, const at::Tensor& fixed_index_to_world,
                          const at::Tensor& moving, const at::Tensor& moving_index_to_world);

}  // namespace autoreg::registration
