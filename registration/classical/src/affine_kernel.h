// Internal to registration/: the affine stage's loss and its gradient in one fused pass
// over the sampled points, for NCC and MSE on the CPU. Autograd through grid_sampler and
// a dozen small tensor ops cost 8–11 ms a step (20 000 points), almost all of it
// per-operation overhead rather than arithmetic; this loop computes the same loss and
// gradient (tests/registration/test_affine_kernel.cpp compares them) in a fraction of that.
#pragma once

#include <array>
#include <cstdint>

namespace autoreg::registration::detail {

struct AffineSamples {
  const float* points = nullptr;  // N×3 fixed world points, centred (row-major)
  const float* fixed = nullptr;   // N fixed intensities at those points
  int64_t count = 0;              // N
  const float* moving = nullptr;  // moving image, D×H×W contiguous
  std::array<int64_t, 3> size{};  // moving voxels along i, j, k
  std::array<double, 12> to_index{};  // 3×4: world point → moving voxel index (i, j, k)
};

// The loss between the fixed intensities and the moving image at y = m·x + t over the
// sampled points (all N when `index` is null), counting only points whose index lies in
// the moving volume (as the autograd path's grid_sampler with zero padding and `inside`
// mask): NCC = 1 − Pearson correlation (global), or MSE. With grad_m / grad_t, also
// ∂loss/∂m (3×3, row-major) and ∂loss/∂t. No overlap: loss 1 and zero gradient.
double affine_loss(const AffineSamples& s, const std::array<double, 9>& m, const std::array<double, 3>& t,
                   const int64_t* index, int64_t samples, bool ncc, std::array<double, 9>* grad_m,
                   std::array<double, 3>* grad_t);

}  // namespace autoreg::registration::detail
