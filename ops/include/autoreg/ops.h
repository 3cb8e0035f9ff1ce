// autoreg's differentiable volume operators.
//
// Conventions (docs/design.md; this header is their owner for the operators):
//   * volumes are tensors N×C×D×H×W, float32 or float64, on the CPU or a CUDA device;
//   * a displacement field u is N×3×D×H×W in voxels of the grid it lives on; channel c
//     moves along spatial dimension c (0 → D, 1 → H, 2 → W);
//   * warp(moving, u)(x) = moving(x + u(x)): the field lives on the fixed grid and
//     pulls the moving image back.
//
// Each function is a thin entry into the torch dispatcher, where the operators are
// registered as autoreg::warp, autoreg::compose, autoreg::integrate and
// autoreg::jacobian_determinant (also callable as torch.ops.autoreg.* once the library
// is loaded). All are differentiable through torch autograd (first order).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

namespace autoreg::ops {

enum class Interpolation {
  Linear,   // trilinear; differentiable with respect to image and displacement
  Nearest,  // nearest voxel (round half to even); for label maps; zero gradient w.r.t. u
};

enum class Padding {
  Zeros,   // samples outside the volume read zero
  Border,  // positions are clamped into the volume (edge voxels extend outwards)
};

// moving(x + u(x)) for every voxel x. image: N×C×D×H×W (any C ≥ 1); displacement:
// N×3×D×H×W on the same grid (resample first where grids differ: io/ does). Returns
// N×C×D×H×W. Empty and non-contiguous inputs are accepted.
at::Tensor warp(const at::Tensor& image, const at::Tensor& displacement,
                Interpolation interpolation = Interpolation::Linear,
                Padding padding = Padding::Zeros);

// Added to a weight's sum where a loss is averaged over it: an empty weight gives 0, not NaN.
inline constexpr double kEmptyWeight = 1e-8;

// The mean squared difference between warp(image, u) (linear) and target over channels
// and voxels: mean((warp(image, u) − target)²); with a weight (N×1×D×H×W),
// Σ_x weight(x)·mean_c(...)² / (Σ weight + kEmptyWeight). image and target: N×C×D×H×W on u's
// grid. Differentiable with respect to the displacement only (image, target and weight
// are treated as constants). On the CPU one pass gives the loss and its gradient (what
// instance optimisation spends its time on with 12 MIND channels); elsewhere it is the
// composite of warp and the mean.
at::Tensor warped_mse(const at::Tensor& image, const at::Tensor& target, const at::Tensor& displacement,
                      Padding padding = Padding::Zeros, const at::Tensor& weight = {});

// The displacement of applying v, then u: w(x) = v(x) + u(x + v(x)), so that
// warp(warp(m, u), v) ≈ warp(m, compose(u, v)). u is sampled trilinearly with border
// padding. Both N×3×D×H×W on one grid.
at::Tensor compose(const at::Tensor& u, const at::Tensor& v);

// Scaling and squaring: exp(v) ≈ (id + v/2^steps)∘...∘(id + v/2^steps), 2^steps times,
// computed as `steps` self-compositions. steps = 0 returns v. velocity: N×3×D×H×W.
inline constexpr int64_t kDefaultIntegrationSteps = 7;
at::Tensor integrate(const at::Tensor& velocity, int64_t steps = kDefaultIntegrationSteps);

// det(∂φ/∂x) of φ(x) = x + u(x) per voxel, with central differences inside the volume
// and one-sided differences on its faces. u: N×3×D×H×W. Returns N×1×D×H×W.
at::Tensor jacobian_determinant(const at::Tensor& displacement);

// CUDA is a plugin: autoreg's CUDA kernels and LibTorch's CUDA backend (libtorch_cuda,
// cuDNN, cuBLAS: +0.5 s and +350 MB resident at start-up on the 2-core CPU machine) live
// in libautoreg_cuda.so beside libautoreg_ops.so and are loaded on first use.
// cuda_available() loads them (once) and says whether a CUDA device can be used; call it
// before anything else asks LibTorch about CUDA (at::hasCUDA and the like), which
// LibTorch answers once for the process. False in a build without CUDA; then, or when
// the plugin cannot be loaded, cuda_unavailable_reason() says why.
bool cuda_available();
std::string cuda_unavailable_reason();

}  // namespace autoreg::ops
