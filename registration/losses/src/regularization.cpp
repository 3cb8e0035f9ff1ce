#include "autoreg/registration/regularization.h"

#include <ATen/ATen.h>

#include <stdexcept>
#include <vector>

namespace autoreg::registration {

at::Tensor gradient_l2(const at::Tensor& field) {
  TORCH_CHECK(field.dim() == 5, "gradient_l2: field must be N×C×D×H×W, got ", field.sizes());
  at::Tensor sum = at::zeros({}, field.options());
  for (int64_t d = 2; d < 5; ++d) {
    const int64_t n = field.size(d);
    if (n < 2) continue;
    sum = sum + (field.narrow(d, 1, n - 1) - field.narrow(d, 0, n - 1)).pow(2).mean();
  }
  return sum;
}

at::Tensor smoothness(const at::Tensor& field, Regularizer kind, const std::array<double, 3>& spacing) {
  TORCH_CHECK(field.dim() == 5 && field.size(1) == 3, "smoothness: field must be N×3×D×H×W, got ", field.sizes());
  const bool known = spacing[0] > 0 && spacing[1] > 0 && spacing[2] > 0;
  const bool isotropic = !known || (spacing[0] == spacing[1] && spacing[1] == spacing[2]);
  if (kind == Regularizer::Diffusion && isotropic) return gradient_l2(field);
  // Forward differences along each axis in physical units (component c scaled by
  // spacing_c / spacing_d), zero past the last voxel (no change outside the grid).
  std::vector<at::Tensor> gradients;
  for (int64_t d = 0; d < 3; ++d) {
    const int64_t n = field.size(2 + d);
    at::Tensor g = n > 1 ? field.narrow(2 + d, 1, n - 1) - field.narrow(2 + d, 0, n - 1)
                         : at::zeros_like(field.narrow(2 + d, 0, 0));
    if (!isotropic) {
      const at::Tensor scale = at::tensor({spacing[0] / spacing[d], spacing[1] / spacing[d], spacing[2] / spacing[d]},
                                          field.options().requires_grad(false))
                                   .view({1, 3, 1, 1, 1});
      g = g * scale;
    }
    if (kind == Regularizer::Diffusion) {
      if (n > 1) gradients.push_back(g.pow(2).mean());
      continue;
    }
    std::vector<int64_t> pad(6, 0);
    pad[2 * (2 - d) + 1] = 1;  // one zero at the end of axis d (constant_pad_nd lists the last axis first)
    gradients.push_back(at::constant_pad_nd(g, pad).pow(2));
  }
  if (kind == Regularizer::Diffusion) {
    at::Tensor sum = at::zeros({}, field.options());
    for (const at::Tensor& g : gradients) sum = sum + g;
    return sum;
  }
  constexpr double kEpsilon = 1e-3;
  return (gradients[0] + gradients[1] + gradients[2] + kEpsilon * kEpsilon).sqrt().mean();
}

at::Tensor soft_dice_loss(const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(a.dim() == 5 && a.sizes() == b.sizes(),
              "soft_dice_loss: two N×C×D×H×W maps of one shape, got ", a.sizes(), " and ", b.sizes());
  const std::vector<int64_t> spatial = {2, 3, 4};
  const at::Tensor overlap = (a * b).sum(spatial);
  const at::Tensor total = a.sum(spatial) + b.sum(spatial);
  // Absent from both: 0/0 → Dice 1 (the ε keeps it finite and differentiable).
  const at::Tensor dice = (2 * overlap + 1e-6) / (total + 1e-6);
  return 1 - dice.mean();
}

}  // namespace autoreg::registration
