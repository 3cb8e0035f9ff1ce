// The gradients of one search step: ω's on the training pair, the virtual step
// ω' = ω − η·P·g, λ's hypergradient and α's first- or second-order gradient through it.
#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <torch/optim/adam.h>

#include <chrono>
#include <cmath>
#include <functional>

#include "autoreg/ops.h"
#include "autoreg/registration/labels.h"
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

void Searcher::restore_weights(const std::vector<at::Tensor>& saved) {
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
  restore_weights(saved);
  saved = move_weights(d, -eps);
  const at::Tensor minus = f();
  restore_weights(saved);
  return (plus - minus) / (2 * eps);
}

namespace {

// into += add, entry by entry (an undefined entry is nothing).
void accumulate(std::vector<at::Tensor>& into, const std::vector<at::Tensor>& add) {
  if (into.empty()) into.resize(add.size());
  for (size_t i = 0; i < add.size(); ++i) {
    if (add[i].defined()) into[i] = into[i].defined() ? into[i] + add[i] : add[i];
  }
}

}  // namespace

std::vector<at::Tensor> Searcher::gradients(const at::Tensor& loss, const std::vector<at::Tensor>& inputs) const {
  // Alone, a non-finite gradient is a fault at once; with other ranks it is found after
  // the sum (sum_across), so that every rank rolls back alike instead of one leaving the
  // others waiting in a collective.
  if (!run_.collective()) return grads(loss, inputs);
  return torch::autograd::grad({loss}, inputs, {}, /*retain_graph=*/false, /*create_graph=*/false,
                               /*allow_unused=*/true);
}

void Searcher::sum_across(std::vector<at::Tensor>& g, const std::vector<at::Tensor>& like,
                          std::vector<at::Tensor>& extra) const {
  registration::Collective* const collective = run_.collective();
  if (!collective) return;
  c10::AutoGradMode no_grad(false);
  // Which entries a rank had, summed with them: an entry no rank's pairs reached stays
  // without a gradient (Adam leaves such a weight alone, as it would alone).
  std::vector<float> had(g.size(), 0.0f);
  std::vector<at::Tensor> parts;
  for (size_t i = 0; i < g.size(); ++i) {
    if (g[i].defined()) {
      had[i] = 1;
    } else {
      g[i] = at::zeros_like(like[i]);
    }
    parts.push_back(g[i]);
  }
  // CPU or device tensors alike: the collective moves each bucket to its backend's device.
  for (auto& e : extra) parts.push_back(e);
  const at::Tensor anywhere = at::tensor(had);
  parts.push_back(anywhere);
  const auto before = std::chrono::steady_clock::now();
  collective->sum(parts);
  allreduce_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - before).count();
  const at::Tensor& reached = anywhere;
  for (size_t i = 0; i < g.size(); ++i) {
    if (!(reached[int64_t(i)].item<float>() > 0)) g[i] = at::Tensor();
  }
  for (const auto& t : g) {
    if (!finite(t)) throw NonFinite("non-finite gradient (summed over the ranks)");
  }
  for (const auto& t : extra) {
    if (!finite(t)) throw NonFinite("non-finite loss or gradient (summed over the ranks)");
  }
}

double Searcher::train_gradient(const std::vector<Slot>& slots, const at::Tensor& lambda, SearchStep& r) {
  supernet_->network().train();
  weights_adam_->zero_grad();
  prepare_path(false);
  if (options_.inject_nan_at == step_ + 1 && !injected_) {
    // A fault that corrupts the state: only restoring the last good state recovers.
    injected_ = true;
    c10::AutoGradMode no_grad(false);
    for (auto& w : supernet_->weights()) w.fill_(std::nan(""));
  }
  // The slots' losses add up to their mean: each back-propagates its share.
  const double share = 1.0 / double(options_.batch);
  at::Tensor totals = at::zeros({1 + kObjectiveTerms}, at::kDouble);
  for (const Slot& s : slots) {
    prepare_path(false);
    Pass p = run(s.weight_pair, lambda, true);
    if (options_.inject_spike_at == step_ + 1 && !spiked_) p.total = p.total * 1e4;
    const double loss = p.total.item<double>();
    totals[0] += loss;
    totals.narrow(0, 1, kObjectiveTerms) += p.terms.detach().to(at::kDouble).cpu();
    // A non-finite loss is the step's fault (after the sum, on every rank alike).
    if (std::isfinite(loss)) (p.total * share).backward();
  }
  if (options_.inject_spike_at == step_ + 1) spiked_ = true;
  const auto params = supernet_->weights();
  std::vector<at::Tensor> g;
  for (const auto& w : params) g.push_back(w.grad());
  std::vector<at::Tensor> extra{totals};
  const double loss_sum = totals[0].item<double>();
  if (run_.collective()) {
    try {
      sum_across(g, params, extra);
    } catch (const NonFinite&) {
      // Named as alone: the loss when it was the loss.
      if (!std::isfinite(extra[0][0].item<double>())) throw NonFinite("non-finite training loss");
      throw;
    }
    for (size_t i = 0; i < params.size(); ++i) params[i].mutable_grad() = g[i];
  } else if (!std::isfinite(loss_sum)) {
    throw NonFinite("non-finite training loss");
  }
  totals = extra[0] * share;
  const double loss = totals[0].item<double>();
  if (!std::isfinite(loss)) throw NonFinite("non-finite training loss");
  for (const auto& t : g) {
    if (!finite(t)) throw NonFinite("non-finite weight gradient");
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
  for (int i = 0; i < kObjectiveTerms; ++i) r.terms[i] = totals[1 + i].item<double>();
  return loss;
}

// The direction of the virtual step ω' = ω − η·P·g, g = ω's gradient (in .grad).
std::vector<at::Tensor> Searcher::step_direction() const {
  std::vector<at::Tensor> g;
  for (const auto& w : supernet_->weights()) g.push_back(w.grad().defined() ? w.grad().detach() : at::Tensor());
  return precondition(g);
}

at::Tensor Searcher::objective_gradient(const std::vector<Slot>& slots, const at::Tensor& lambda, double eta,
                                        SearchStep& r) {
  const auto params = supernet_->weights();
  const double share = 1.0 / double(options_.batch);
  // v = ∇ω' of the validation pairs' mean Dice loss after the virtual step (one slot's
  // graph at a time).
  auto saved = move_weights(step_direction(), -eta);
  std::vector<at::Tensor> v;
  double dice_sum = 0;
  for (const Slot& s : slots) {
    prepare_path(false);
    const TrainingPair& val = s.val_box;
    const at::Tensor u = supernet_->network().forward(val.moving.to(device_, dtype_), val.fixed.to(device_, dtype_));
    const at::Tensor dice = registration::label_dice_loss(val.moving_labels, val.fixed_labels, u,
                                                          registration::shared_labels(val.moving_labels, val.fixed_labels));
    dice_sum += dice.item<double>();
    accumulate(v, gradients(dice * share, params));
  }
  restore_weights(saved);
  std::vector<at::Tensor> extra{at::tensor({dice_sum}, at::kDouble)};
  sum_across(v, params, extra);
  r.hyper_dice = extra[0][0].item<double>() * share;
  // (P·v)ᵀ∇ω term_i for every term at once: two forward passes per slot.
  at::Tensor difference = central(precondition(v), [&] {
    c10::AutoGradMode no_grad(false);
    prepare_path(false);
    at::Tensor sum = at::zeros({kObjectiveTerms}, at::kDouble);
    for (const Slot& s : slots) {
      const Pass q = run(s.train_box, lambda, false);
      sum += (q.terms * q.mask).to(at::kDouble).cpu() * share;
    }
    return sum;
  });
  // v is the same on every rank, so is whether there is a difference at all.
  if (!difference.defined()) return at::zeros({kObjectiveTerms}, at::kDouble);
  std::vector<at::Tensor> none, summed{difference};
  sum_across(none, {}, summed);
  // dDice(ω')/dλ_i = −η·(P·v)ᵀ∇ω term_i.
  return -eta * summed[0];
}

at::Tensor Searcher::architecture_gradient(const std::vector<Slot>& slots, const at::Tensor& lambda, double eta,
                                           SearchStep& r) {
  at::Tensor& alpha = supernet_->alpha();
  const double share = 1.0 / double(options_.batch);
  at::Tensor g;
  double validation_sum = 0;
  std::vector<at::Tensor> none;
  if (options_.order == Order::First) {
    std::vector<at::Tensor> sum;
    for (const Slot& s : slots) {
      prepare_path(true);  // α's mixing weights: a graph of their own for each slot's gradient
      const Pass q = run(s.val_box, lambda, false);
      validation_sum += q.total.item<double>();
      accumulate(sum, gradients(q.total * share, {alpha}));
    }
    std::vector<at::Tensor> extra{at::tensor({validation_sum}, at::kDouble)};
    sum_across(sum, {alpha}, extra);
    r.validation_loss = extra[0][0].item<double>() * share;
    g = sum[0];
  } else {
    // DARTS's second order: ∇α L_val(ω', α) − η·∇²α,ω L_train(ω, α)·P·v, v = ∇ω' L_val(ω', α).
    const auto params = supernet_->weights();
    auto saved = move_weights(step_direction(), -eta);
    std::vector<at::Tensor> inputs = {alpha};
    inputs.insert(inputs.end(), params.begin(), params.end());
    std::vector<at::Tensor> all;
    for (const Slot& s : slots) {
      prepare_path(true);
      const Pass q = run(s.val_box, lambda, false);
      validation_sum += q.total.item<double>();
      accumulate(all, gradients(q.total * share, inputs));
    }
    restore_weights(saved);
    std::vector<at::Tensor> extra{at::tensor({validation_sum}, at::kDouble)};
    sum_across(all, inputs, extra);
    r.validation_loss = extra[0][0].item<double>() * share;
    at::Tensor hessian_v = central(precondition({all.begin() + 1, all.end()}), [&] {
      std::vector<at::Tensor> sum;
      for (const Slot& s : slots) {
        prepare_path(true);
        accumulate(sum, gradients(run(s.train_box, lambda, true).total * share, {alpha}));
      }
      return sum[0].defined() ? sum[0] : at::zeros_like(alpha);
    });
    if (hessian_v.defined()) {
      std::vector<at::Tensor> summed{hessian_v};
      sum_across(none, {}, summed);
      hessian_v = summed[0];
    }
    g = all[0].defined() && hessian_v.defined() ? all[0] - eta * hessian_v : all[0];
  }
  if (!g.defined()) g = at::zeros_like(alpha);
  // Once, after the sum: the latency term is the same on every rank.
  return g + architecture_->latency_gradient();
}

at::Tensor Searcher::objective_hypergradient(const TrainingPair& train, const TrainingPair& val) {
  SearchStep r;
  const at::Tensor lambda = objective_.lambda();
  const std::vector<Slot> slots{{train, val, train, val, train}};
  train_gradient(slots, lambda, r);
  return objective_gradient(slots, lambda, options_.weight_lr * run_.guard().lr_scale(), r);
}

at::Tensor Searcher::architecture_gradient(const TrainingPair& train, const TrainingPair& val) {
  SearchStep r;
  const at::Tensor lambda = objective_.lambda();
  const std::vector<Slot> slots{{train, val, train, val, train}};
  train_gradient(slots, lambda, r);
  return architecture_gradient(slots, lambda, options_.weight_lr * run_.guard().lr_scale(), r);
}

}  // namespace autoreg::search
