// What the search's own files share: its fault type, checks and gradient helper, and
// one forward pass of the supernet on a pair.
#pragma once

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "autoreg/search/searcher.h"

namespace autoreg::search {
namespace detail {

inline constexpr double kAdamBeta2 = 0.999, kAdamEps = 1e-8;  // torch's Adam defaults, used for ω

// A step that met a non-finite loss or gradient: rolled back, never applied.
using NonFinite = registration::StepFault;

inline bool finite(const at::Tensor& t) { return !t.defined() || at::isfinite(t).all().item<bool>(); }

inline double norm(const std::vector<at::Tensor>& v) {
  double sum = 0;
  for (const auto& t : v) sum += t.defined() ? t.pow(2).sum().item<double>() : 0.0;
  return std::sqrt(sum);
}

inline std::vector<at::Tensor> grads(const at::Tensor& loss, const std::vector<at::Tensor>& inputs) {
  auto g = torch::autograd::grad({loss}, inputs, {}, /*retain_graph=*/false, /*create_graph=*/false,
                                 /*allow_unused=*/true);
  for (const auto& x : g) {
    if (!finite(x)) throw NonFinite("non-finite gradient in an unrolled step");
  }
  return g;
}

}  // namespace detail

// One forward pass of the supernet on a pair (a private type of the Searcher).
struct Searcher::Pass {
  at::Tensor terms;  // 5, the objective terms
  at::Tensor mask;   // 5: 0 for the image terms of a synthetic labelled pair
  at::Tensor total;  // Σ mask·λ·terms (+ dice_weight · soft Dice when asked)
  at::Tensor u;
};

}  // namespace autoreg::search
