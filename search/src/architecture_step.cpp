#include "autoreg/search/architecture_step.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <torch/optim/adam.h>

#include <algorithm>
#include <vector>

#include "search_internal.h"

namespace autoreg::search {

ArchitectureStep::ArchitectureStep(Supernet& supernet, const OpCosts& costs, const registration::Genotype& base,
                                   const SearchOptions& options)
    : supernet_(supernet),
      costs_(costs),
      base_(base),
      budget_ms_(options.budget_ms),
      latency_weight_(options.latency_weight),
      lr_(options.architecture_lr) {
  reference_ms_ = std::max(1e-6, predicted_ms(costs_, base_));
  allowed_ = candidates_within(costs_, budget_ms_, supernet_.searched(), base_);
  supernet_.set_allowed(allowed_);
  // DARTS's betas (0.5, 0.999) and weight decay (search_options.h).
  adam_ = std::make_unique<torch::optim::Adam>(
      std::vector<at::Tensor>{supernet_.alpha()},
      torch::optim::AdamOptions(lr_).betas({0.5, 0.999}).weight_decay(options.architecture_weight_decay));
  if (options.base_logit != 0) {
    c10::AutoGradMode no_grad(false);
    for (int e = 0; e < kEdges; ++e) {
      if (supernet_.searched()[e]) supernet_.alpha()[e][operation_index(base_.edges[e])] = options.base_logit;
    }
  }
  // Sampling starts within the budget too (uniform over the allowed candidates may not be).
  keep_within_budget();
}

ArchitectureStep::~ArchitectureStep() = default;

bool ArchitectureStep::searched() const {
  return std::find(supernet_.searched().begin(), supernet_.searched().end(), true) != supernet_.searched().end();
}

at::Tensor ArchitectureStep::probabilities() const { return supernet_.probabilities().detach().to(at::kDouble); }

std::array<double, kEdges> ArchitectureStep::entropy() const {
  const at::Tensor p = probabilities();
  const at::Tensor h = -(p * at::log(p.clamp_min(1e-300))).sum(1);
  std::array<double, kEdges> out{};
  for (int e = 0; e < kEdges; ++e) out[e] = h[e].item<double>();
  return out;
}

registration::Genotype ArchitectureStep::derived() const {
  return derive_genotype(probabilities(), costs_, budget_ms_, supernet_.searched(), allowed_, base_);
}

double ArchitectureStep::expected_forward_ms() const { return expected_ms(costs_, probabilities()).item<double>(); }

at::Tensor ArchitectureStep::latency_gradient() const {
  const at::Tensor ms = expected_ms(costs_, supernet_.probabilities());
  return detail::grads(latency_weight_ * ms / reference_ms_, {supernet_.alpha()})[0];
}

void ArchitectureStep::update(const at::Tensor& gradient) {
  if (!detail::finite(gradient)) throw detail::NonFinite("non-finite architecture gradient");
  supernet_.alpha().mutable_grad() = gradient;
  adam_->step();
  keep_within_budget();
}

// Projects α onto {E[forward ms] ≤ budget} along the gradient of E (Newton steps on the
// one constraint), outside the optimiser. A penalty inside α's objective would do this
// through Adam, which normalises each logit's gradient: the penalty, always pointing the
// same way, would both dominate the noisier registration loss while over budget and,
// through Adam's second moments, mute it for hundreds of updates after.
void ArchitectureStep::keep_within_budget() {
  if (!(budget_ms_ > 0)) return;
  at::Tensor& alpha = supernet_.alpha();
  const double target = budget_ms_ * (1 - 1e-3);
  for (int i = 0; i < 50; ++i) {
    const at::Tensor ms = expected_ms(costs_, supernet_.probabilities());
    const double over = ms.item<double>() - target;
    if (over <= 0) return;
    const at::Tensor g = detail::grads(ms, {alpha})[0];
    const double squared = g.pow(2).sum().item<double>();
    if (!(squared > 0)) return;
    c10::AutoGradMode no_grad(false);
    alpha.sub_(g, over / squared);
  }
}

void ArchitectureStep::set_step_scale(double scale) {
  for (auto& group : adam_->param_groups()) static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr_ * scale);
}

}  // namespace autoreg::search
