// The search's objective level: the weights λ of the loss terms (objective.h), kept as
// ρ = log λ (λ stays positive) and moved by Adam on ρ from the hypergradient of the
// validation Dice (the Searcher computes it through one unrolled ω step). Terms that are
// not searched keep their starting weight. With objective_scale_fixed (and more than one
// searched term) an update changes only the mix of the searched terms: their geometric
// mean, λ's scale against the fixed soft-Dice term, stays where it started
// (search_options.h says why).
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <memory>

#include "autoreg/registration/objective.h"
#include "autoreg/search/search_options.h"

namespace torch::optim {
class Adam;
}

namespace autoreg::search {

class ObjectiveStep {
 public:
  // Throws std::invalid_argument when a searched term's starting weight is not positive.
  explicit ObjectiveStep(const SearchOptions& options);
  ~ObjectiveStep();
  ObjectiveStep(const ObjectiveStep&) = delete;
  ObjectiveStep& operator=(const ObjectiveStep&) = delete;

  // λ now: 5, CPU double.
  at::Tensor lambda() const;
  registration::ObjectiveWeights weights() const;
  // Whether any term is searched (none: nothing to update).
  bool searched() const;
  const std::array<bool, registration::kObjectiveTerms>& searched_terms() const { return searched_; }

  // One update from dDice(ω')/dλ (5, double) at the step's λ (`lambda`). Throws
  // registration::StepFault when the gradient is not finite.
  void update(const at::Tensor& dice_gradient, const at::Tensor& lambda);
  // The guard's step-size scale (1: the options' rate).
  void set_step_scale(double scale);

  // ρ and its optimiser, for the search's state and the ranks' starting copy.
  at::Tensor& rho() { return rho_; }
  const at::Tensor& rho() const { return rho_; }
  torch::optim::Adam& optimiser() { return *adam_; }
  const torch::optim::Adam& optimiser() const { return *adam_; }

 private:
  int searched_count() const;
  double mean_searched_log() const;

  std::array<bool, registration::kObjectiveTerms> searched_;
  registration::ObjectiveWeights initial_;
  bool scale_fixed_;
  double lr_;
  at::Tensor rho_;  // log λ, 5, CPU float64
  std::unique_ptr<torch::optim::Adam> adam_;
};

}  // namespace autoreg::search
