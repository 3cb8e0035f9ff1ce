// Losses on fields and label maps, besides image similarity (similarity.h): the
// smoothness of a field and the soft Dice overlap of label probabilities.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <string>

#include "autoreg/base/names.h"

namespace autoreg::registration {

// How instance optimisation keeps its field smooth (`--regularizer`):
//   Diffusion       the mean squared gradient of the velocity: smooth everywhere, right
//                   for brains (one tissue, no sliding), folds least;
//   TotalVariation  isotropic total variation of the velocity (pTVreg's choice,
//                   Vishnevskiy et al., IEEE TMI 2017): per component the mean gradient
//                   norm, which lets the field change sharply where organs slide (the
//                   liver along the body wall, the lungs along the ribs).
enum class Regularizer { Diffusion, TotalVariation };

// Its one name table (base/names.h): "diffusion" / "tv" ↔ the enum; parse throws
// std::invalid_argument naming the word.
inline constexpr base::NameTable<Regularizer, 2> kRegularizerNames{
    "regularizer", {{{Regularizer::Diffusion, "diffusion"}, {Regularizer::TotalVariation, "tv"}}}};
inline Regularizer parse_regularizer(const std::string& name) { return kRegularizerNames.parse(name); }
inline std::string regularizer_name(Regularizer r) { return kRegularizerNames.name(r); }

// L2 gradient smoothness of an N×C×D×H×W field: the sum over the three spatial axes of
// the mean squared forward difference (0 for a constant field; axes of size 1 add 0).
at::Tensor gradient_l2(const at::Tensor& field);

// The smoothness term of a displacement or velocity field N×3×D×H×W in voxels of a grid of
// `spacing` (mm along D, H, W; component c of the field is along axis c): the field's
// Jacobian ∂u_c/∂x_d is taken in physical units (difference × spacing_c / spacing_d), so
// one weight serves 1 mm brains and 4 mm slices. Diffusion: the sum over axes of the mean
// squared entries (gradient_l2 exactly, for equal spacings or spacing {0, 0, 0}); total
// variation: the mean over voxels and components of √(Σ_d (∂u_c/∂x_d)² + ε²), ε = 1e-3.
at::Tensor smoothness(const at::Tensor& field, Regularizer kind, const std::array<double, 3>& spacing);

// Soft Dice loss 1 − mean over channels of 2·Σab / (Σa + Σb) between two N×C×D×H×W maps
// of label probabilities (one-hot label maps, or a warped one-hot map); channels absent
// from both count as perfect overlap. Differentiable in both.
at::Tensor soft_dice_loss(const at::Tensor& a, const at::Tensor& b);

}  // namespace autoreg::registration
