#include "autoreg/registration/regularization.h"

#include <ATen/ATen.h>

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
