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

#include "autoreg/device.h"
#include "autoreg/ops.h"
#include "autoreg/registration/augment.h"
#include "autoreg/registration/run_state.h"
#include "autoreg/registration/training_pairs.h"
#include "search_internal.h"

namespace autoreg::search {
using registration::kObjectiveTerms;
using registration::TrainingPair;
using detail::finite;
using detail::grads;
using detail::NonFinite;

Searcher::Searcher(registration::TrainingSet data, const registration::ModelInfo& info, SearchOptions options,
                   OpCosts costs)
    : data_(std::move(data)),
      info_(info),
      options_(std::move(options)),
      costs_(std::move(costs)),
      device_(ops::parse_device(options_.device)),
      dtype_(options_.float64 ? at::kDouble : at::kFloat),
      guard_(options_.spike_factor, options_.max_rollbacks),
      writer_(options_.async_checkpoints) {
  const auto& o = options_;
  if (o.path == Path::Mixed && o.architecture_path == Path::Sampled) {
    throw std::invalid_argument("a mixed path has no sample for a sampled architecture gradient");
  }
  if (o.batch <= 0) throw std::invalid_argument("the batch must be positive");
  if (o.steps <= 0 || o.architecture_every <= 0 || o.objective_every <= 0 || o.snapshot_every <= 0) {
    throw std::invalid_argument("steps and update intervals must be positive");
  }
  if (!(o.warmup_fraction >= 0 && o.warmup_fraction < 1)) throw std::invalid_argument("the warm-up fraction must be in [0, 1)");
  if (!(o.update_crop > 0 && o.update_crop <= 1)) throw std::invalid_argument("the update crop must be in (0, 1]");
  if (!(o.tau_min > 0 && o.tau_max >= o.tau_min)) throw std::invalid_argument("need 0 < tau_min <= tau_max");
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
  // α: DARTS's betas (0.5, 0.999) and weight decay (SearchOptions).
  architecture_adam_ = std::make_unique<torch::optim::Adam>(
      std::vector<at::Tensor>{supernet_->alpha()},
      torch::optim::AdamOptions(o.architecture_lr).betas({0.5, 0.999}).weight_decay(o.architecture_weight_decay));
  objective_adam_ = std::make_unique<torch::optim::Adam>(std::vector<at::Tensor>{rho_},
                                                         torch::optim::AdamOptions(o.objective_lr));
  if (o.base_logit != 0) {
    c10::AutoGradMode no_grad(false);
    for (int e = 0; e < kEdges; ++e) {
      if (supernet_->searched()[e]) supernet_->alpha()[e][operation_index(info_.network.genotype.edges[e])] = o.base_logit;
    }
  }
  // Sampling starts within the budget too (uniform over the allowed candidates may not be).
  keep_within_budget();
  // α's entropy before any update (the report's "start"), kept with the checkpoints.
  std::string start;
  for (double h : entropy()) start += (start.empty() ? "" : " ") + registration::exact_text(h);
  notes["entropy_start"] = start;
  snapshots_.reset(state());
}

Searcher::~Searcher() = default;

double Searcher::progress() const {
  return progress_ ? std::clamp(*progress_, 0.0, 1.0) : double(step_) / double(options_.steps);
}

std::string Searcher::phase() const {
  const double p = progress(), warmup = options_.warmup_fraction;
  if (p < warmup) return "warmup";
  if (options_.mode == Mode::Joint) return "search";
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

double Searcher::validate() { return validation_scores().dice; }

registration::ValidationScores Searcher::validation_scores() {
  // The network being trained (prepare_path: the base path in a warm-up on it, the mixed
  // supernet on the mixed path: the derived network alone is another function until it is
  // retrained), except on sampled paths, where it is the derived network.
  if (options_.path == Path::Sampled && !fixed_genotype_ && !warming_up_) {
    supernet_->use_fixed(derived());
  } else {
    prepare_path(false);
  }
  return registration::validation_scores(supernet_->network(), data_, options_.seed, device_);
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

int Searcher::searched_term_count() const {
  return int(std::count(options_.searched_terms.begin(), options_.searched_terms.end(), true));
}

double Searcher::mean_searched_log_lambda() const {
  double sum = 0;
  for (int i = 0; i < kObjectiveTerms; ++i) sum += options_.searched_terms[i] ? rho_[i].item<double>() : 0.0;
  return sum / std::max(1, searched_term_count());
}

// Shifts the searched log-weights back to the mean they had: their product, λ's scale
// against the soft-Dice term, stays as it started (SearchOptions::objective_scale_fixed).
void Searcher::keep_objective_scale(double mean_log_before) {
  const double shift = mean_searched_log_lambda() - mean_log_before;
  c10::AutoGradMode no_grad(false);
  for (int i = 0; i < kObjectiveTerms; ++i) {
    if (options_.searched_terms[i]) rho_[i] -= shift;
  }
}

void Searcher::prepare_path(bool alpha_grad) {
  if (fixed_genotype_) {
    supernet_->use_fixed(*fixed_genotype_);
  } else if (warming_up_) {
    supernet_->use_fixed(info_.network.genotype);
  } else if (options_.path == Path::Mixed || (alpha_grad && options_.architecture_path == Path::Mixed)) {
    supernet_->use_mixed(alpha_grad);
  } else {
    // τ falls linearly from tau_max to tau_min over the search after the warm-up.
    const double w = options_.warmup_fraction;
    const double after = std::clamp((progress() - w) / std::max(1e-9, 1 - w), 0.0, 1.0);
    supernet_->reuse_sample(options_.tau_max - (options_.tau_max - options_.tau_min) * after, alpha_grad);
  }
}

SearchStep Searcher::step() {
  while (true) {
    try {
      SearchStep r = try_step();
      guard_.accepted(step_, r.gradient_norm, r.phase);
      r.rollbacks = guard_.rollbacks();
      r.gradient_average = guard_.gradient_average();
      snapshots_.accepted();
      if (step_ % options_.snapshot_every == 0) snapshots_.take(state());
      return r;
    } catch (const registration::StepFault& e) {
      const auto record = guard_.faulted(step_ + 1, e.what(), "the search", "try a lower --lr");
      load_state(snapshots_.rollback(), "(the last good state)");
      guard_.keep(record);
      set_learning_rates();
      snapshots_.replace_latest(state());
    }
  }
}

void Searcher::set_learning_rates() {
  const auto set = [&](torch::optim::Adam& adam, double lr) {
    for (auto& group : adam.param_groups()) static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr * guard_.lr_scale());
  };
  set(*weights_adam_, options_.weight_lr);
  set(*architecture_adam_, options_.architecture_lr);
  set(*objective_adam_, options_.objective_lr);
}

std::vector<Searcher::Slot> Searcher::draw_slots(std::mt19937_64& step_rng, bool crop_weights) const {
  registration::DrawOptions draw;
  draw.augment = options_.augment;
  draw.deformation_voxels = options_.deformation_voxels;
  registration::DrawOptions plain;
  plain.augment = false;
  const int world = collective_ ? collective_->world() : 1;
  std::vector<Slot> slots;
  for (int64_t g = rank(); g < options_.batch; g += world) {
    // Slot 0 goes on from the step's generators (as a step did before batches), slot g
    // starts from (seed, step, g): the same pairs whichever rank draws them.
    std::mt19937_64 own;
    std::mt19937_64* rng = &step_rng;
    if (g > 0) {
      own = registration::step_generator(options_.seed, step_, g);
      rng = &own;
    }
    Slot s;
    s.train = registration::draw_pair(data_, data_.train, draw, *rng);
    s.val = registration::draw_pair(data_, labelled_validation_, plain, *rng);
    // What α and λ see: one box of each pair.
    s.train_box = registration::crop_pair(s.train, options_.update_crop, *rng);
    s.val_box = registration::crop_pair(s.val, options_.update_crop, *rng);
    s.weight_pair = crop_weights ? registration::crop_pair(s.train, options_.weight_crop, *rng) : s.train;
    slots.push_back(std::move(s));
  }
  if (slots.empty()) throw std::logic_error("a rank without a slot: the batch is smaller than the ranks");
  return slots;
}

void Searcher::distribute(registration::Collective& collective) {
  if (options_.batch < collective.world()) {
    throw std::invalid_argument("the batch (" + std::to_string(options_.batch) + " pairs per step) must be at least the " +
                                "number of ranks (" + std::to_string(collective.world()) + ")");
  }
  collective_ = &collective;
  // Rank 0's starting state (the same seed gives the same one; this makes sure), in
  // place (the collective moves CPU tensors to NCCL's device and back).
  std::vector<at::Tensor> state;
  for (const auto& w : supernet_->weights()) state.push_back(w.detach());
  state.push_back(supernet_->alpha().detach());
  state.push_back(rho_.detach());
  collective.broadcast(state);
  snapshots_.reset(this->state());
}

SearchStep Searcher::try_step() {
  const int64_t t = step_;
  std::mt19937_64 rng = registration::step_generator(options_.seed, t, 0);
  SearchStep r;
  allreduce_seconds_ = 0;
  r.phase = phase();
  if (r.phase == "objective" && !fixed_genotype_) fixed_genotype_ = derived();
  // Nothing to update (no searched term, no searched edge): no update and its cost.
  const bool any_term = std::find(options_.searched_terms.begin(), options_.searched_terms.end(), true) !=
                        options_.searched_terms.end();
  const bool any_edge =
      std::find(supernet_->searched().begin(), supernet_->searched().end(), true) != supernet_->searched().end();
  const bool update_objective =
      any_term && (r.phase == "search" || r.phase == "objective") && t % options_.objective_every == 0;
  const bool update_architecture =
      any_edge && (r.phase == "search" || r.phase == "architecture") && t % options_.architecture_every == 0;
  const auto clock = std::chrono::steady_clock::now;
  const auto since = [&](std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(clock() - t0).count();
  };
  auto t0 = clock();

  // The step's path (drawn once, used by its three updates; from (seed, step) alone: the
  // same on every rank), then this rank's slots.
  warming_up_ = r.phase == "warmup" && options_.warmup_on_base;
  if (!fixed_genotype_ && !warming_up_ && options_.path == Path::Sampled) supernet_->use_sampled(options_.tau_max, false);
  const bool crop_weights = options_.weight_crop < 1 && !warming_up_ && !fixed_genotype_;
  const std::vector<Slot> slots = draw_slots(rng, crop_weights);

  // ω's gradient on the training pairs (a box of each on the supernet when weight_crop <
  // 1), applied last, after λ and α have used it.
  const at::Tensor lambda = this->lambda();
  r.weight_voxels = slots.front().weight_pair.fixed.numel();
  r.loss = train_gradient(slots, lambda, r);
  guard_.check(r.gradient_norm, r.phase);  // ω's, before clipping (the same on every rank)
  const double eta = options_.weight_lr * guard_.lr_scale();
  r.seconds_weights = since(t0);

  t0 = clock();
  if (update_objective) {
    // Through λ = exp(ρ): × λ_i.
    at::Tensor g_rho = objective_gradient(slots, lambda, eta, r) * lambda;
    for (int i = 0; i < kObjectiveTerms; ++i) {
      if (!options_.searched_terms[i]) g_rho[i] = 0;
    }
    if (!finite(g_rho)) throw NonFinite("non-finite objective hypergradient");
    const bool keep_scale = options_.objective_scale_fixed && searched_term_count() > 1;
    const double scale_before = mean_searched_log_lambda();
    if (keep_scale) {
      // Only the mix: the gradient's component along "every searched λ up" is dropped
      // (and Adam's per-term normalisation re-adds some, which keep_objective_scale takes
      // back out).
      double mean = 0;
      for (int i = 0; i < kObjectiveTerms; ++i) mean += options_.searched_terms[i] ? g_rho[i].item<double>() : 0.0;
      mean /= searched_term_count();
      for (int i = 0; i < kObjectiveTerms; ++i) {
        if (options_.searched_terms[i]) g_rho[i] -= mean;
      }
    }
    rho_.mutable_grad() = g_rho;
    objective_adam_->step();
    if (keep_scale) keep_objective_scale(scale_before);
    r.objective_updated = true;
  }
  r.seconds_objective = since(t0);

  t0 = clock();
  if (update_architecture) {
    const at::Tensor g_alpha = architecture_gradient(slots, lambda, eta, r);
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
  r.seconds_allreduce = allreduce_seconds_;
  const at::Tensor l = this->lambda();
  for (int i = 0; i < kObjectiveTerms; ++i) r.lambda[i] = l[i].item<double>();
  return r;
}

}  // namespace autoreg::search
