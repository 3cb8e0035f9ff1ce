// The gradients of one search step: ω's on the training pair, the virtual step
// ω' = ω − η·P·g, λ's hypergradient and α's first- or second-order gradient through it.
#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <torch/optim/adam.h>

#include <cmath>
#include <functional>

#include "autoreg/ops.h"
#include "autoreg/registration/augment.h"
#include "autoreg/registration/objective.h"
#include "search_internal.h"

namespace autoreg::search {

using registration::kObjectiveTerms;
using registration::TrainingPair;
using detail::finite;
using detail::grads;
using detail::kAdamBeta2;
using detail::kAdamEps;
using detail::NonFinite;
using detail::norm;

Searcher::Pass Searcher::run(const TrainingPair& pair, const at::Tensor& lambda, bool with_dice) {
  Pass p;
  const at::Tensor m = pair.moving.to(device_, dtype_), f = pair.fixed.to(device_, dtype_);
  p.u = supernet_->network().forward(m, f);
  const at::Tensor warped = ops::warp(m, p.u, ops::Interpolation::Linear, ops::Padding::Border);
  std::array<bool, kObjectiveTerms> needed{};
  for (int i = 0; i < kObjectiveTerms; ++i) needed[i] = options_.searched_terms[i] || lambda[i].item<double>() != 0;
  p.terms = registration::objective_terms(f, warped, p.u, needed);
  const bool labelled = options_.dice_weight > 0 && pair.moving_labels.defined() && pair.fixed_labels.defined();
  // As in training: a synthetic image's similarity measures the synthesiser, so such a
  // labelled pair learns from its labels alone (whether or not this pass adds the Dice
  // term: λ's hypergradient differentiates the training loss without it).
  p.mask = at::ones({kObjectiveTerms}, p.terms.options());
  if (pair.synthetic && labelled) p.mask.narrow(0, 0, registration::kSmoothness).zero_();
  const std::vector<int64_t> labels = with_dice && labelled
                                          ? registration::shared_labels(pair.moving_labels, pair.fixed_labels)
                                          : std::vector<int64_t>{};
  p.total = (p.terms * p.mask * lambda.to(p.terms.options())).sum();
  if (!labels.empty()) {
    p.total = p.total + options_.dice_weight *
                            registration::label_dice_loss(pair.moving_labels, pair.fixed_labels, p.u, labels);
  }
  return p;
}

// P·d for each weight: P the diagonal preconditioner of Adam's next step on ω (its
// second moment after this step's gradient, bias-corrected), so that ω − η·P·g is the
// step Adam is about to take (momentum aside).
std::vector<at::Tensor> Searcher::precondition(const std::vector<at::Tensor>& direction) const {
  c10::AutoGradMode no_grad(false);
  const auto params = supernet_->weights();
  std::vector<at::Tensor> out(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    const at::Tensor& d = direction[i];
    const at::Tensor& g = params[i].grad();
    if (!d.defined() || !g.defined()) continue;
    at::Tensor v = (1 - kAdamBeta2) * g * g;
    int64_t t = 1;
    auto it = weights_adam_->state().find(params[i].unsafeGetTensorImpl());
    if (it != weights_adam_->state().end()) {
      const auto& s = static_cast<const torch::optim::AdamParamState&>(*it->second);
      v = v + kAdamBeta2 * s.exp_avg_sq();
      t = s.step() + 1;
    }
    out[i] = options_.precondition ? d / ((v / (1 - std::pow(kAdamBeta2, double(t)))).sqrt() + kAdamEps) : d;
  }
  return out;
}

// ω ← ω + scale·direction (no gradient); returns ω as it was.
std::vector<at::Tensor> Searcher::move_weights(const std::vector<at::Tensor>& direction, double scale) {
  c10::AutoGradMode no_grad(false);
  const auto params = supernet_->weights();
  std::vector<at::Tensor> saved;
  saved.reserve(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    saved.push_back(params[i].detach().clone());
    if (direction[i].defined()) params[i].add_(direction[i], scale);
  }
  return saved;
}

void Searcher::restore(const std::vector<at::Tensor>& saved) {
  c10::AutoGradMode no_grad(false);
  const auto params = supernet_->weights();
  for (size_t i = 0; i < params.size(); ++i) params[i].copy_(saved[i]);
}

at::Tensor Searcher::central(const std::vector<at::Tensor>& d, const std::function<at::Tensor()>& f) {
  const double n = norm(d);
  if (!(n > 0)) return at::Tensor();
  // ε·‖d‖ = 0.01 as DARTS in float32 (smaller moves drown in rounding); 1e-4 in float64,
  // where 0.01 already shows the loss's curvature.
  const double eps = (options_.float64 ? 1e-4 : 1e-2) / n;
  auto saved = move_weights(d, eps);
  const at::Tensor plus = f();
  restore(saved);
  saved = move_weights(d, -eps);
  const at::Tensor minus = f();
  restore(saved);
  return (plus - minus) / (2 * eps);
}

double Searcher::train_gradient(const TrainingPair& train, const at::Tensor& lambda, SearchStep& r) {
  supernet_->network().train();
  weights_adam_->zero_grad();
  prepare_path(false);
  if (options_.inject_nan_at == step_ + 1 && !injected_) {
    // A fault that corrupts the state: only restoring the last good state recovers.
    injected_ = true;
    c10::AutoGradMode no_grad(false);
    for (auto& w : supernet_->weights()) w.fill_(std::nan(""));
  }
  Pass p = run(train, lambda, true);
  if (options_.inject_spike_at == step_ + 1 && !spiked_) {
    spiked_ = true;
    p.total = p.total * 1e4;
  }
  const double loss = p.total.item<double>();
  if (!std::isfinite(loss)) throw NonFinite("non-finite training loss");
  p.total.backward();
  std::vector<at::Tensor> g;
  for (const auto& w : supernet_->weights()) {
    if (!finite(w.grad())) throw NonFinite("non-finite weight gradient");
    g.push_back(w.grad());
  }
  // Clipped as DARTS does: a path of rarely trained candidates can give one huge
  // gradient, and the flow heads, shared by every path, would carry it to all of them.
  r.gradient_norm = norm(g);
  if (options_.max_gradient_norm > 0 && r.gradient_norm > options_.max_gradient_norm) {
    c10::AutoGradMode no_grad(false);
    for (auto& t : g) {
      if (t.defined()) t.mul_(options_.max_gradient_norm / r.gradient_norm);
    }
  }
  for (int i = 0; i < kObjectiveTerms; ++i) r.terms[i] = p.terms[i].item<double>();
  return loss;
}

// The direction of the virtual step ω' = ω − η·P·g, g = ω's gradient (in .grad).
std::vector<at::Tensor> Searcher::step_direction() const {
  std::vector<at::Tensor> g;
  for (const auto& w : supernet_->weights()) g.push_back(w.grad().defined() ? w.grad().detach() : at::Tensor());
  return precondition(g);
}

at::Tensor Searcher::objective_gradient(const TrainingPair& train, const TrainingPair& val, const at::Tensor& lambda,
                                        double eta, SearchStep& r) {
  const auto params = supernet_->weights();
  // v = ∇ω' of the validation pair's Dice loss after the virtual step.
  auto saved = move_weights(step_direction(), -eta);
  prepare_path(false);
  const at::Tensor u = supernet_->network().forward(val.moving.to(device_, dtype_), val.fixed.to(device_, dtype_));
  const at::Tensor dice = registration::label_dice_loss(val.moving_labels, val.fixed_labels, u,
                                                        registration::shared_labels(val.moving_labels, val.fixed_labels));
  r.hyper_dice = dice.item<double>();
  const auto v = grads(dice, params);
  restore(saved);
  // (P·v)ᵀ∇ω term_i for every term at once: two forward passes.
  const at::Tensor difference = central(precondition(v), [&] {
    c10::AutoGradMode no_grad(false);
    prepare_path(false);
    const Pass q = run(train, lambda, false);
    return (q.terms * q.mask).to(at::kDouble).cpu();
  });
  // dDice(ω')/dλ_i = −η·(P·v)ᵀ∇ω term_i.
  return difference.defined() ? -eta * difference : at::zeros({kObjectiveTerms}, at::kDouble);
}

at::Tensor Searcher::architecture_gradient(const TrainingPair& train, const TrainingPair& val, const at::Tensor& lambda,
                                           double eta, SearchStep& r) {
  at::Tensor& alpha = supernet_->alpha();
  at::Tensor g;
  if (options_.order == "first") {
    prepare_path(true);
    const Pass q = run(val, lambda, false);
    r.validation_loss = q.total.item<double>();
    g = grads(q.total, {alpha})[0];
  } else {
    // DARTS's second order: ∇α L_val(ω', α) − η·∇²α,ω L_train(ω, α)·P·v, v = ∇ω' L_val(ω', α).
    const auto params = supernet_->weights();
    auto saved = move_weights(step_direction(), -eta);
    prepare_path(true);
    const Pass q = run(val, lambda, false);
    r.validation_loss = q.total.item<double>();
    std::vector<at::Tensor> inputs = {alpha};
    inputs.insert(inputs.end(), params.begin(), params.end());
    const auto all = grads(q.total, inputs);
    restore(saved);
    const at::Tensor hessian_v = central(precondition({all.begin() + 1, all.end()}), [&] {
      prepare_path(true);
      return grads(run(train, lambda, true).total, {alpha})[0];
    });
    g = all[0].defined() && hessian_v.defined() ? all[0] - eta * hessian_v : all[0];
  }
  if (!g.defined()) g = at::zeros_like(alpha);
  return g + grads(latency_loss(supernet_->probabilities()), {alpha})[0];
}

at::Tensor Searcher::objective_hypergradient(const TrainingPair& train, const TrainingPair& val) {
  SearchStep r;
  const at::Tensor lambda = this->lambda();
  train_gradient(train, lambda, r);
  return objective_gradient(train, val, lambda, options_.weight_lr * guard_.lr_scale(), r);
}

at::Tensor Searcher::architecture_gradient(const TrainingPair& train, const TrainingPair& val) {
  SearchStep r;
  const at::Tensor lambda = this->lambda();
  train_gradient(train, lambda, r);
  return architecture_gradient(train, val, lambda, options_.weight_lr * guard_.lr_scale(), r);
}

}  // namespace autoreg::search
