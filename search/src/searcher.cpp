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
#include "autoreg/registration/run_state.h"
#include "autoreg/registration/training_pairs.h"
#include "search_internal.h"

namespace autoreg::search {
using registration::kObjectiveTerms;
using registration::TrainingPair;
using detail::finite;
using detail::grads;
using detail::NonFinite;

namespace {

// The options, refused (std::invalid_argument) when they cannot make a search.
SearchOptions checked(SearchOptions o, const registration::ModelInfo& info, const OpCosts& costs) {
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
  if (costs.grid != info.grid) throw std::invalid_argument("the operation costs were measured at another grid");
  return o;
}

}  // namespace

Searcher::Searcher(registration::TrainingSet data, const registration::ModelInfo& info, SearchOptions options,
                   OpCosts costs)
    : info_(info),
      options_(checked(std::move(options), info, costs)),
      costs_(std::move(costs)),
      sampler_(std::move(data), options_),
      objective_(options_),
      device_(ops::parse_device(options_.device)),
      dtype_(options_.float64 ? at::kDouble : at::kFloat),
      run_({options_.spike_factor, options_.max_rollbacks, options_.snapshot_every, options_.async_checkpoints, true,
            "the search", "try a lower --learning-rate", "SEARCH"},
           {[this] { return state(); },
            [this](const registration::Archive& a, const std::string& path) { load_state(a, path); },
            [this] { set_step_scale(); }, [this] { return step_; }}) {
  const auto& o = options_;
  // The starting weights come from the seed alone (not from whatever drew random numbers
  // before: preprocessing, the cost measurement).
  at::manual_seed(o.seed);
  supernet_ = std::make_unique<Supernet>(info_.network, searched_edges(o.edges));
  supernet_->network().to(device_, dtype_);
  if (o.float64) supernet_->alpha() = supernet_->alpha().detach().to(at::kDouble).requires_grad_(true);
  weights_adam_ = std::make_unique<torch::optim::Adam>(supernet_->weights(), torch::optim::AdamOptions(o.weight_lr));
  architecture_ = std::make_unique<ArchitectureStep>(*supernet_, costs_, info_.network.genotype, o);
  // α's entropy before any update (the report's "start"), kept with the checkpoints.
  std::string start;
  for (double h : entropy()) start += (start.empty() ? "" : " ") + registration::exact_text(h);
  notes["entropy_start"] = start;
  run_.start();
}

Searcher::~Searcher() = default;

double Searcher::progress() const {
  return progress_ ? std::clamp(*progress_, 0.0, 1.0) : double(step_) / double(options_.steps);
}

const char* phase_name(SearchPhase phase) {
  switch (phase) {
    case SearchPhase::Warmup: return "warmup";
    case SearchPhase::Search: return "search";
    case SearchPhase::Architecture: return "architecture";
    case SearchPhase::Objective: return "objective";
  }
  return "search";
}

SearchPhase Searcher::phase() const {
  const double p = progress(), warmup = options_.warmup_fraction;
  if (p < warmup) return SearchPhase::Warmup;
  if (options_.mode == Mode::Joint) return SearchPhase::Search;
  return p < warmup + (1 - warmup) / 2 ? SearchPhase::Architecture : SearchPhase::Objective;
}

registration::Genotype Searcher::derived() const {
  if (fixed_genotype_) return *fixed_genotype_;
  return architecture_->derived();
}

int64_t Searcher::validation_pair_count() const {
  return int64_t(registration::validation_pairs(sampler_.data()).size());
}

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
  return registration::validation_scores(supernet_->network(), sampler_.data(), options_.seed, device_);
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
  SearchStep r;
  run_.step([&] {
    r = try_step();
    return registration::GuardedRun::Outcome{step_, r.gradient_norm, phase_name(r.phase)};
  });
  r.rollbacks = run_.guard().rollbacks();
  r.gradient_average = run_.guard().gradient_average();
  return r;
}

void Searcher::set_step_scale() {
  const double scale = run_.guard().lr_scale();
  for (auto& group : weights_adam_->param_groups()) {
    static_cast<torch::optim::AdamOptions&>(group.options()).lr(options_.weight_lr * scale);
  }
  architecture_->set_step_scale(scale);
  objective_.set_step_scale(scale);
}

void Searcher::distribute(registration::Collective& collective) {
  if (options_.batch < collective.world()) {
    throw std::invalid_argument("the batch (" + std::to_string(options_.batch) + " pairs per step) must be at least the " +
                                "number of ranks (" + std::to_string(collective.world()) + ")");
  }
  // Rank 0's starting state (the same seed gives the same one; this makes sure), in
  // place (the collective moves CPU tensors to NCCL's device and back).
  std::vector<at::Tensor> state;
  for (const auto& w : supernet_->weights()) state.push_back(w.detach());
  state.push_back(supernet_->alpha().detach());
  state.push_back(objective_.rho().detach());
  run_.distribute(collective, std::move(state));
}

SearchStep Searcher::try_step() {
  const int64_t t = step_;
  std::mt19937_64 rng = registration::step_generator(options_.seed, t, 0);
  SearchStep r;
  allreduce_seconds_ = 0;
  r.phase = phase();
  if (r.phase == SearchPhase::Objective && !fixed_genotype_) fixed_genotype_ = derived();
  // Nothing to update (no searched term, no searched edge): no update and its cost.
  const bool update_objective =
      objective_.searched() && (r.phase == SearchPhase::Search || r.phase == SearchPhase::Objective) && t % options_.objective_every == 0;
  const bool update_architecture = architecture_->searched() && (r.phase == SearchPhase::Search || r.phase == SearchPhase::Architecture) &&
                                   t % options_.architecture_every == 0;
  const auto clock = std::chrono::steady_clock::now;
  const auto since = [&](std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(clock() - t0).count();
  };
  auto t0 = clock();

  // The step's path (drawn once, used by its three updates; from (seed, step) alone: the
  // same on every rank), then this rank's slots.
  warming_up_ = r.phase == SearchPhase::Warmup && options_.warmup_on_base;
  if (!fixed_genotype_ && !warming_up_ && options_.path == Path::Sampled) supernet_->use_sampled(options_.tau_max, false);
  const bool crop_weights = options_.weight_crop < 1 && !warming_up_ && !fixed_genotype_;
  const std::vector<Slot> slots = sampler_.draw(t, rng, crop_weights, run_.rank(), run_.world());

  // ω's gradient on the training pairs (a box of each on the supernet when weight_crop <
  // 1), applied last, after λ and α have used it.
  const at::Tensor lambda = objective_.lambda();
  r.weight_voxels = slots.front().weight_pair.fixed.numel();
  r.loss = train_gradient(slots, lambda, r);
  run_.guard().check(r.gradient_norm, phase_name(r.phase));  // ω's, before clipping (the same on every rank)
  const double eta = options_.weight_lr * run_.guard().lr_scale();
  r.seconds_weights = since(t0);

  t0 = clock();
  if (update_objective) {
    objective_.update(objective_gradient(slots, lambda, eta, r), lambda);
    r.objective_updated = true;
  }
  r.seconds_objective = since(t0);

  t0 = clock();
  if (update_architecture) {
    architecture_->update(architecture_gradient(slots, lambda, eta, r));
    r.architecture_updated = true;
  }
  r.seconds_architecture = since(t0);

  t0 = clock();
  weights_adam_->step();
  r.seconds_weights += since(t0);
  ++step_;
  r.step = step_;
  r.seconds_allreduce = allreduce_seconds_;
  const at::Tensor l = objective_.lambda();
  for (int i = 0; i < kObjectiveTerms; ++i) r.lambda[i] = l[i].item<double>();
  return r;
}

}  // namespace autoreg::search
