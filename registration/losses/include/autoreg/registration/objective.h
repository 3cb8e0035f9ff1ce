// The training objective as weighted terms (docs/design.md, "The method"): what `autoreg train`
// minimises and what the search's λ weighs. Every term is a loss (lower is better):
//   ncc9          1 − local NCC, window 9, at the model grid
//   ncc7_half     1 − local NCC, window 7, both images average-pooled to 1/2 scale
//   ncc5_quarter  1 − local NCC, window 5, at 1/4 scale
//   mind          mean squared difference of MIND-SSC descriptors (multimodal pairs)
//   smoothness    L2 gradient of the displacement (regularization.h)
// The loss is Σ λ_i · term_i: linear in λ, which the search's hypergradient relies on.
// Besides the image terms, soft Dice on warped label maps (label_dice_loss) is added
// with its own weight where both label maps exist.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <string>
#include <vector>

#include "autoreg/registration/similarity.h"

namespace autoreg::registration {

inline constexpr int kObjectiveTerms = 5;
inline constexpr std::array<const char*, kObjectiveTerms> kObjectiveTermNames = {
    "ncc9", "ncc7_half", "ncc5_quarter", "mind", "smoothness"};
enum ObjectiveTerm : int { kNcc9 = 0, kNcc7Half, kNcc5Quarter, kMind, kSmoothness };

// λ: one non-negative weight per term.
struct ObjectiveWeights {
  std::array<double, kObjectiveTerms> lambda{1, 0, 0, 0, 1};  // `train`'s default: NCC 9 + smoothness

  // The weights that `train --similarity KIND --lambda λ` has always meant: the one
  // similarity term (ncc: ncc9; mind: mind; mse has no term here and is refused) and λ
  // on smoothness.
  static ObjectiveWeights for_similarity(Similarity kind, double smoothness);
  // "ncc9=1,ncc7_half=0.5,...": names as above, any order, missing names 0. Throws
  // std::invalid_argument naming the offending item.
  static ObjectiveWeights parse(const std::string& text);
  std::string to_string() const;  // parse(to_string()) == *this
  bool operator==(const ObjectiveWeights& o) const { return lambda == o.lambda; }
};

// The five terms of a fixed image, the moving image warped by u, and u (all on one grid,
// 1×1×D×H×W images, 1×3×D×H×W field), as a 5-vector (differentiable). Terms whose
// `needed` flag is false are 0 and cost nothing.
at::Tensor objective_terms(const at::Tensor& fixed, const at::Tensor& warped, const at::Tensor& u,
                           const std::array<bool, kObjectiveTerms>& needed);

// Which terms a weighting needs (the non-zero ones).
std::array<bool, kObjectiveTerms> needed_terms(const ObjectiveWeights& weights);

// Soft Dice loss of the moving label map warped by u against the fixed one, over
// `labels` (label values): at half resolution (one-hot probabilities average-pooled ×2,
// the field pooled and halved), since a one-hot map has a channel per label and the term
// would otherwise cost more than the network. Differentiable in u.
at::Tensor label_dice_loss(const at::Tensor& moving_labels, const at::Tensor& fixed_labels,
                           const at::Tensor& u, const std::vector<int64_t>& labels);

}  // namespace autoreg::registration
