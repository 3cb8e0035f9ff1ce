#include "autoreg/search/objective_step.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <torch/optim/adam.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "search_internal.h"

namespace autoreg::search {
using registration::kObjectiveTerms;

ObjectiveStep::ObjectiveStep(const SearchOptions& options)
    : searched_(options.searched_terms),
      initial_(options.initial_objective),
      scale_fixed_(options.objective_scale_fixed),
      lr_(options.objective_lr) {
  std::vector<double> rho(kObjectiveTerms);
  for (int i = 0; i < kObjectiveTerms; ++i) {
    const double l = initial_.lambda[i];
    if (searched_[i] && !(l > 0)) {
      throw std::invalid_argument(std::string("a searched objective weight starts positive: ") +
                                  registration::kObjectiveTermNames[i]);
    }
    rho[i] = l > 0 ? std::log(l) : 0;
  }
  rho_ = at::tensor(rho, at::kDouble).set_requires_grad(true);
  adam_ = std::make_unique<torch::optim::Adam>(std::vector<at::Tensor>{rho_}, torch::optim::AdamOptions(lr_));
}

ObjectiveStep::~ObjectiveStep() = default;

at::Tensor ObjectiveStep::lambda() const {
  at::Tensor l = rho_.detach().exp();
  for (int i = 0; i < kObjectiveTerms; ++i) {
    if (!searched_[i]) l[i] = initial_.lambda[i];
  }
  return l;
}

registration::ObjectiveWeights ObjectiveStep::weights() const {
  registration::ObjectiveWeights w;
  const at::Tensor l = lambda();
  for (int i = 0; i < kObjectiveTerms; ++i) w.lambda[i] = l[i].item<double>();
  return w;
}

bool ObjectiveStep::searched() const { return searched_count() > 0; }

int ObjectiveStep::searched_count() const { return int(std::count(searched_.begin(), searched_.end(), true)); }

double ObjectiveStep::mean_searched_log() const {
  double sum = 0;
  for (int i = 0; i < kObjectiveTerms; ++i) sum += searched_[i] ? rho_[i].item<double>() : 0.0;
  return sum / std::max(1, searched_count());
}

void ObjectiveStep::update(const at::Tensor& dice_gradient, const at::Tensor& lambda) {
  // Through λ = exp(ρ): × λ_i.
  at::Tensor g_rho = dice_gradient * lambda;
  for (int i = 0; i < kObjectiveTerms; ++i) {
    if (!searched_[i]) g_rho[i] = 0;
  }
  if (!detail::finite(g_rho)) throw detail::NonFinite("non-finite objective hypergradient");
  const bool keep_scale = scale_fixed_ && searched_count() > 1;
  const double scale_before = mean_searched_log();
  if (keep_scale) {
    // Only the mix: the gradient's component along "every searched λ up" is dropped
    // (and Adam's per-term normalisation re-adds some, which the shift below takes back
    // out).
    double mean = 0;
    for (int i = 0; i < kObjectiveTerms; ++i) mean += searched_[i] ? g_rho[i].item<double>() : 0.0;
    mean /= searched_count();
    for (int i = 0; i < kObjectiveTerms; ++i) {
      if (searched_[i]) g_rho[i] -= mean;
    }
  }
  rho_.mutable_grad() = g_rho;
  adam_->step();
  if (keep_scale) {
    // The searched log-weights shifted back to the mean they had.
    const double shift = mean_searched_log() - scale_before;
    c10::AutoGradMode no_grad(false);
    for (int i = 0; i < kObjectiveTerms; ++i) {
      if (searched_[i]) rho_[i] -= shift;
    }
  }
}

void ObjectiveStep::set_step_scale(double scale) {
  for (auto& group : adam_->param_groups()) static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr_ * scale);
}

}  // namespace autoreg::search
