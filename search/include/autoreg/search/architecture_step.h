// The search's architecture level: α (the supernet's logits over each searched edge's
// candidates) moved by Adam with DARTS's betas and weight decay, held to the forward-time
// budget (candidates that cannot fit it masked, E[forward ms] projected back within it
// after every update), and the genotype it derives. The gradient itself comes from the
// Searcher (first or second order through the unrolled ω step); the latency term's
// gradient is this level's.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <memory>

#include "autoreg/registration/genotype.h"
#include "autoreg/search/op_cost.h"
#include "autoreg/search/search_options.h"
#include "autoreg/search/supernet.h"

namespace torch::optim {
class Adam;
}

namespace autoreg::search {

class ArchitectureStep {
 public:
  // On `supernet`'s α (which it outlives): masks the candidates outside the budget, sets
  // the base genotype's logits to base_logit and brings α within the budget.
  ArchitectureStep(Supernet& supernet, const OpCosts& costs, const registration::Genotype& base,
                   const SearchOptions& options);
  ~ArchitectureStep();
  ArchitectureStep(const ArchitectureStep&) = delete;
  ArchitectureStep& operator=(const ArchitectureStep&) = delete;

  // Whether any edge is searched (none: nothing to update).
  bool searched() const;
  // softmax(α), 12×8 (CPU, double), and each edge's entropy (nats).
  at::Tensor probabilities() const;
  std::array<double, kEdges> entropy() const;
  // The genotype α gives now (within the budget); E[forward ms] of the distribution.
  registration::Genotype derived() const;
  double expected_forward_ms() const;
  const CandidateMask& allowed() const { return allowed_; }
  // ∂/∂α of latency_weight · E[forward ms] / reference_ms.
  at::Tensor latency_gradient() const;
  // One update from α's gradient (latency included), then back within the budget.
  // Throws registration::StepFault when the gradient is not finite.
  void update(const at::Tensor& gradient);
  // The guard's step-size scale (1: the options' rate).
  void set_step_scale(double scale);
  torch::optim::Adam& optimiser() { return *adam_; }
  const torch::optim::Adam& optimiser() const { return *adam_; }

 private:
  void keep_within_budget();

  Supernet& supernet_;
  const OpCosts& costs_;
  registration::Genotype base_;
  double budget_ms_, latency_weight_, lr_;
  CandidateMask allowed_{};
  double reference_ms_ = 1;
  std::unique_ptr<torch::optim::Adam> adam_;
};

}  // namespace autoreg::search
