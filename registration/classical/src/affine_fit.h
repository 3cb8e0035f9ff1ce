// Internal to the affine stage (affine.cpp): the optimiser of an affine (or rigid) map
// between two pyramids, from given starts, by Adam on a similarity at random points —
// the fused CPU pass for NCC and MSE, autograd otherwise (mutual information, masks, a GPU).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <tuple>
#include <vector>

#include "autoreg/registration/affine.h"

namespace autoreg::registration::detail {

// One pyramid level of a volume: the image block-averaged to about `spacing` mm, and
// its index-to-world matrix (block centre (f−1)/2 in the original indices).
struct Level {
  at::Tensor image;           // 1×1×D×H×W float32
  at::Tensor index_to_world;  // 4×4 float64
};

// World coordinates of every voxel of `image` (N×3 float64, rows in memory order).
at::Tensor world_points(const at::Tensor& image, const at::Tensor& index_to_world);

// Optimises affine starts on the pyramid levels of the fixed and moving volumes (and of
// their masks, when given: empty vectors without). Parameters are centred on c_f (the
// fixed centre of mass) and scaled by `radius` (mm) so that every one moves points by
// about a millimetre per unit.
class AffineFit {
 public:
  AffineFit(const std::vector<Level>& fixed, const std::vector<Level>& moving, const std::vector<Level>& fixed_mask,
            const std::vector<Level>& moving_mask, at::Tensor c_f, double radius, const AffineOptions& o);
  ~AffineFit();
  // Runs `steps` steps at `level` from (m0, t0); returns the optimised (m, t) and the
  // loss of the result on all the level's points.
  std::tuple<at::Tensor, at::Tensor, double> run(int level, const at::Tensor& m0, const at::Tensor& t0, int64_t steps,
                                                 bool report);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace autoreg::registration::detail
