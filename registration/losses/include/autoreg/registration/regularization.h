// Losses on fields and label maps, besides image similarity (similarity.h): the
// smoothness of a field and the soft Dice overlap of label probabilities.
#pragma once

#include <ATen/core/Tensor.h>

namespace autoreg::registration {

// L2 gradient smoothness of an N×C×D×H×W field: the sum over the three spatial axes of
// the mean squared forward difference (0 for a constant field; axes of size 1 add 0).
at::Tensor gradient_l2(const at::Tensor& field);

// Soft Dice loss 1 − mean over channels of 2·Σab / (Σa + Σb) between two N×C×D×H×W maps
// of label probabilities (one-hot label maps, or a warped one-hot map); channels absent
// from both count as perfect overlap. Differentiable in both.
at::Tensor soft_dice_loss(const at::Tensor& a, const at::Tensor& b);

}  // namespace autoreg::registration
