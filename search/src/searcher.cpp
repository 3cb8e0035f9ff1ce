#include "autoreg/search/searcher.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/optim/adam.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <random>
#include <sstream>
#include <stdexcept>

#include "autoreg/ops.h"
#include "autoreg/registration/augment.h"
#include "autoreg/registration/run_state.h"
#include "autoreg/registration/training_pairs.h"

namespace autoreg::search {
namespace {

using registration::kObjectiveTerms;
using registration::TrainingPair;

constexpr double kAdamBeta2 = 0.999, kAdamEps = 1e-8;  // torch's Adam defaults, used for ω

// A step that met a non-finite loss or gradient: rolled back, never applied.
class NonFinite : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

bool finite(const at::Tensor& t) { return !t.defined() || at::isfinite(t).all().item<bool>(); }


double norm(const std::vector<at::Tensor>& v) {
  double sum = 0;
  for (const auto& t : v) sum += t.defined() ? t.pow(2).sum().item<double>() : 0.0;
  return std::sqrt(sum);
}

std::vector<at::Tensor> grads(const at::Tensor& loss, const std::vector<at::Tensor>& inputs) {
  auto g = torch::autograd::grad({loss}, inputs, {}, /*retain_graph=*/false, /*create_graph=*/false,
                                 /*allow_unused=*/true);
  for (const auto& x : g) {
    if (!finite(x)) throw NonFinite("non-finite gradient in an unrolled step");
  }
  return g;
}

}  // namespace

// One forward pass of the supernet on a pair (declared private in the class).
struct Searcher::Pass {
  at::Tensor terms;  // 5, the objective terms
  at::Tensor mask;   // 5: 0 for the image terms of a synthetic labelled pair
  at::Tensor total;  // Σ mask·λ·terms (+ dice_weight · soft Dice when asked)
  at::Tensor u;
};

Searcher::Searcher(registration::TrainingSet data, const registration::ModelInfo& info, SearchOptions options,
                   OpCosts costs)
    : data_(std::move(data)),
      info_(info),
      options_(std::move(options)),
      costs_(std::move(costs)),
      device_(options_.device == "cuda" ? at::kCUDA : at::kCPU),
      dtype_(options_.float64 ? at::kDouble : at::kFloat) {
  const auto& o = options_;
  if (o.mode != "joint" && o.mode != "sequential") throw std::invalid_argument("mode must be joint or sequential, got '" + o.mode + "'");
  if (o.order != "first" && o.order != "second") throw std::invalid_argument("order must be first or second, got '" + o.order + "'");
  if (o.path != "sampled" && o.path != "mixed") throw std::invalid_argument("path must be sampled or mixed, got '" + o.path + "'");
  if (o.path == "mixed" && o.architecture_path == "sampled") {
    throw std::invalid_argument("a mixed path has no sample for a sampled architecture gradient");
  }
  if (o.architecture_path != "sampled" && o.architecture_path != "mixed") {
    throw std::invalid_argument("the architecture path must be sampled or mixed, got '" + o.architecture_path + "'");
  }
  if (o.steps <= 0 || o.architecture_every <= 0 || o.objective_every <= 0 || o.snapshot_every <= 0) {
    throw std::invalid_argument("steps and update intervals must be positive");
  }
  if (!(o.warmup_fraction >= 0 && o.warmup_fraction < 1)) throw std::invalid_argument("the warm-up fraction must be in [0, 1)");
  if (!(o.update_crop > 0 && o.update_crop <= 1)) throw std::invalid_argument("the update crop must be in (0, 1]");
  if (!(o.tau_min > 0 && o.tau_max >= o.tau_min)) throw std::invalid_argument("need 0 < tau_min <= tau_max");
  if (o.device == "cuda" && !at::hasCUDA()) throw std::runtime_error("--device cuda: no CUDA device is available here");
  if (o.device != "cpu" && o.device != "cuda") throw std::invalid_argument("device must be cpu or cuda, got '" + o.device + "'");
  if (costs_.grid != info_.grid) throw std::invalid_argument("the operation costs were measured at another grid");
  const bool atlas = data_.atlas.has_value();
  if (data_.train.size() < (atlas ? 1u : 2u)) {
    throw std::invalid_argument(atlas ? "the search needs at least one training subject besides the atlas"
                                      : "a pairwise search needs at least two training subjects");
  }
  if (registration::validation_pairs(data_).empty()) {
    throw std::invalid_argument(
        "the search needs labelled validation subjects ('val' rows with label maps): α and λ are chosen on them, λ to "
        "raise the Dice of their warped labels; " +
        std::string(atlas ? "and an atlas with labels" : "at least two of them in pairwise mode"));
  }

  // The starting weights come from the seed alone (not from whatever drew random numbers
  // before: preprocessing, the cost measurement).
  at::manual_seed(o.seed);
  supernet_ = std::make_unique<Supernet>(info_.network, searched_edges(o.edges));
  supernet_->network().to(device_, dtype_);
  if (o.float64) supernet_->alpha() = supernet_->alpha().detach().to(at::kDouble).requires_grad_(true);
  for (const auto& s : data_.validation) {
    if (s.labels.defined()) labelled_validation_.push_back(s);
  }
  reference_ms_ = std::max(1e-6, predicted_ms(costs_, info_.network.genotype));
  allowed_ = candidates_within(costs_, o.budget_ms, supernet_->searched(), info_.network.genotype);
  supernet_->set_allowed(allowed_);
  std::vector<double> rho(kObjectiveTerms);
  for (int i = 0; i < kObjectiveTerms; ++i) {
    const double l = o.initial_objective.lambda[i];
    if (o.searched_terms[i] && !(l > 0)) {
      throw std::invalid_argument(std::string("a searched objective weight starts positive: ") +
                                  registration::kObjectiveTermNames[i]);
    }
    rho[i] = l > 0 ? std::log(l) : 0;
  }
  rho_ = at::tensor(rho, at::kDouble).set_requires_grad(true);
  weights_adam_ = std::make_unique<torch::optim::Adam>(supernet_->weights(), torch::optim::AdamOptions(o.weight_lr));
  // α: DARTS's betas (0.5, 0.999) and weight decay 1e-3 (pulls unused logits back to 0).
  architecture_adam_ = std::make_unique<torch::optim::Adam>(
      std::vector<at::Tensor>{supernet_->alpha()},
      torch::optim::AdamOptions(o.architecture_lr).betas({0.5, 0.999}).weight_decay(1e-3));
  objective_adam_ = std::make_unique<torch::optim::Adam>(std::vector<at::Tensor>{rho_},
                                                         torch::optim::AdamOptions(o.objective_lr));
  // Sampling starts within the budget too (uniform over the allowed candidates may not be).
  keep_within_budget();
  // α's entropy before any update (the report's "start"), kept with the checkpoints.
  std::string start;
  for (double h : entropy()) start += (start.empty() ? "" : " ") + registration::exact_text(h);
  notes["entropy_start"] = start;
  snapshot_ = state();
}

Searcher::~Searcher() = default;

double Searcher::progress() const {
  return progress_ ? std::clamp(*progress_, 0.0, 1.0) : double(step_) / double(options_.steps);
}

std::string Searcher::phase() const {
  const double p = progress(), warmup = options_.warmup_fraction;
  if (p < warmup) return "warmup";
  if (options_.mode == "joint") return "search";
  return p < warmup + (1 - warmup) / 2 ? "architecture" : "objective";
}

at::Tensor Searcher::lambda() const {
  at::Tensor l = rho_.detach().exp();
  for (int i = 0; i < kObjectiveTerms; ++i) {
    if (!options_.searched_terms[i]) l[i] = options_.initial_objective.lambda[i];
  }
  return l;
}

registration::ObjectiveWeights Searcher::objective() const {
  registration::ObjectiveWeights w;
  const at::Tensor l = lambda();
  for (int i = 0; i < kObjectiveTerms; ++i) w.lambda[i] = l[i].item<double>();
  return w;
}

at::Tensor Searcher::probabilities() const { return supernet_->probabilities().detach().to(at::kDouble); }

std::array<double, kEdges> Searcher::entropy() const {
  const at::Tensor p = probabilities();
  const at::Tensor h = -(p * at::log(p.clamp_min(1e-300))).sum(1);
  std::array<double, kEdges> out{};
  for (int e = 0; e < kEdges; ++e) out[e] = h[e].item<double>();
  return out;
}

registration::Genotype Searcher::derived() const {
  if (fixed_genotype_) return *fixed_genotype_;
  return derive_genotype(probabilities(), costs_, options_.budget_ms, supernet_->searched(), allowed_,
                         info_.network.genotype);
}

double Searcher::expected_forward_ms() const { return expected_ms(costs_, probabilities()).item<double>(); }

int64_t Searcher::validation_pair_count() const { return int64_t(registration::validation_pairs(data_).size()); }

double Searcher::validate() {
  supernet_->use_fixed(derived());
  return registration::validation_dice(supernet_->network(), data_, options_.seed, device_);
}

at::Tensor Searcher::latency_loss(const at::Tensor& probabilities) const {
  const at::Tensor ms = expected_ms(costs_, probabilities);
  return options_.latency_weight * ms / reference_ms_;
}

// Projects α onto {E[forward ms] ≤ budget} along the gradient of E (Newton steps on the
// one constraint), outside the optimiser. A penalty inside α's objective would do this
// through Adam, which normalises each logit's gradient: the penalty, always pointing the
// same way, would both dominate the noisier registration loss while over budget and,
// through Adam's second moments, mute it for hundreds of updates after.
void Searcher::keep_within_budget() {
  if (!(options_.budget_ms > 0)) return;
  at::Tensor& alpha = supernet_->alpha();
  const double target = options_.budget_ms * (1 - 1e-3);
  for (int i = 0; i < 50; ++i) {
    const at::Tensor ms = expected_ms(costs_, supernet_->probabilities());
    const double over = ms.item<double>() - target;
    if (over <= 0) return;
    const at::Tensor g = grads(ms, {alpha})[0];
    const double squared = g.pow(2).sum().item<double>();
    if (!(squared > 0)) return;
    c10::AutoGradMode no_grad(false);
    alpha.sub_(g, over / squared);
  }
}

void Searcher::prepare_path(bool alpha_grad) {
  if (fixed_genotype_) {
    supernet_->use_fixed(*fixed_genotype_);
  } else if (options_.path == "mixed" || (alpha_grad && options_.architecture_path == "mixed")) {
    supernet_->use_mixed(alpha_grad);
  } else {
    // τ falls linearly from tau_max to tau_min over the search after the warm-up.
    const double w = options_.warmup_fraction;
    const double after = std::clamp((progress() - w) / std::max(1e-9, 1 - w), 0.0, 1.0);
    supernet_->reuse_sample(options_.tau_max - (options_.tau_max - options_.tau_min) * after, alpha_grad);
  }
}

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

SearchStep Searcher::step() {
  while (true) {
    try {
      SearchStep r = try_step();
      if (step_ > last_fault_step_) rollbacks_in_a_row_ = 0;
      r.rollbacks = rollbacks_;
      if (step_ % options_.snapshot_every == 0) snapshot_ = state();
      return r;
    } catch (const NonFinite& e) {
      const int64_t at_step = step_ + 1;
      ++rollbacks_;
      ++rollbacks_in_a_row_;
      last_fault_step_ = std::max(last_fault_step_, at_step);
      const int64_t in_a_row = rollbacks_in_a_row_, total = rollbacks_, fault = last_fault_step_;
      if (in_a_row > options_.max_rollbacks) {
        throw std::runtime_error("the search stopped: " + std::to_string(in_a_row) + " non-finite steps in a row (" +
                                 e.what() + " at step " + std::to_string(at_step) +
                                 "), even at smaller step sizes; try a lower --lr");
      }
      const double scale = lr_scale_ * 0.5;
      load_state(snapshot_, "(the last good state)");
      lr_scale_ = scale;
      rollbacks_ = total;
      rollbacks_in_a_row_ = in_a_row;
      last_fault_step_ = fault;
      set_learning_rates();
      snapshot_ = state();
    }
  }
}

void Searcher::set_learning_rates() {
  const auto set = [&](torch::optim::Adam& adam, double lr) {
    for (auto& group : adam.param_groups()) static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr * lr_scale_);
  };
  set(*weights_adam_, options_.weight_lr);
  set(*architecture_adam_, options_.architecture_lr);
  set(*objective_adam_, options_.objective_lr);
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
  const Pass p = run(train, lambda, true);
  const double loss = p.total.item<double>();
  if (!std::isfinite(loss)) throw NonFinite("non-finite training loss");
  p.total.backward();
  for (const auto& w : supernet_->weights()) {
    if (!finite(w.grad())) throw NonFinite("non-finite weight gradient");
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
  return objective_gradient(train, val, lambda, options_.weight_lr * lr_scale_, r);
}

at::Tensor Searcher::architecture_gradient(const TrainingPair& train, const TrainingPair& val) {
  SearchStep r;
  const at::Tensor lambda = this->lambda();
  train_gradient(train, lambda, r);
  return architecture_gradient(train, val, lambda, options_.weight_lr * lr_scale_, r);
}

SearchStep Searcher::try_step() {
  const int64_t t = step_;
  std::mt19937_64 rng(options_.seed * 0x9E3779B97F4A7C15ULL + uint64_t(t));
  at::manual_seed(options_.seed * 1000003ULL + uint64_t(t));
  SearchStep r;
  r.phase = phase();
  if (r.phase == "objective" && !fixed_genotype_) fixed_genotype_ = derived();
  const bool update_objective = (r.phase == "search" || r.phase == "objective") && t % options_.objective_every == 0;
  const bool update_architecture =
      (r.phase == "search" || r.phase == "architecture") && t % options_.architecture_every == 0;
  const auto clock = std::chrono::steady_clock::now;
  const auto since = [&](std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(clock() - t0).count();
  };
  auto t0 = clock();

  // The step's path (drawn once, used by its three updates) and pairs.
  if (!fixed_genotype_ && options_.path == "sampled") supernet_->use_sampled(options_.tau_max, false);
  registration::DrawOptions draw;
  draw.augment = options_.augment;
  draw.deformation_voxels = options_.deformation_voxels;
  const TrainingPair train = registration::draw_pair(data_, data_.train, draw, rng);
  registration::DrawOptions plain;
  plain.augment = false;
  const TrainingPair val = registration::draw_pair(data_, labelled_validation_, plain, rng);
  // What α and λ see: one box of each pair.
  const TrainingPair train_box = registration::crop_pair(train, options_.update_crop, rng);
  const TrainingPair val_box = registration::crop_pair(val, options_.update_crop, rng);

  // ω's gradient on the training pair, applied last, after λ and α have used it.
  const at::Tensor lambda = this->lambda();
  r.loss = train_gradient(train, lambda, r);
  const double eta = options_.weight_lr * lr_scale_;
  r.seconds_weights = since(t0);

  t0 = clock();
  if (update_objective) {
    // Through λ = exp(ρ): × λ_i.
    at::Tensor g_rho = objective_gradient(train_box, val_box, lambda, eta, r) * lambda;
    for (int i = 0; i < kObjectiveTerms; ++i) {
      if (!options_.searched_terms[i]) g_rho[i] = 0;
    }
    if (!finite(g_rho)) throw NonFinite("non-finite objective hypergradient");
    rho_.mutable_grad() = g_rho;
    objective_adam_->step();
    r.objective_updated = true;
  }
  r.seconds_objective = since(t0);

  t0 = clock();
  if (update_architecture) {
    const at::Tensor g_alpha = architecture_gradient(train_box, val_box, lambda, eta, r);
    if (!finite(g_alpha)) throw NonFinite("non-finite architecture gradient");
    supernet_->alpha().mutable_grad() = g_alpha;
    architecture_adam_->step();
    keep_within_budget();
    r.architecture_updated = true;
  }
  r.seconds_architecture = since(t0);

  t0 = clock();
  weights_adam_->step();
  r.seconds_weights += since(t0);
  ++step_;
  r.step = step_;
  const at::Tensor l = this->lambda();
  for (int i = 0; i < kObjectiveTerms; ++i) r.lambda[i] = l[i].item<double>();
  return r;
}

}  // namespace autoreg::search
