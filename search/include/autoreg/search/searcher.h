// The triple-level search (docs/design.md, "The method"): network weights ω, architecture α
// and objective weights λ, on a training set already on the model grid (as the trainer
// takes it; `autoreg search` builds it from a manifest).
//
// One step, joint mode (the default):
//   ω  a training pair, the loss Σ λ_i·term_i (objective.h) + soft Dice where labelled,
//      Adam on the path's weights;
//   λ  every `objective_every` steps: raise the soft Dice of a labelled validation pair
//      after one unrolled ω step, ω' = ω − η·P·∇ω L_train (P: Adam's current diagonal
//      preconditioner, so the virtual step is the one Adam would take). L_train is linear
//      in λ, so dDice(ω')/dλ_i = −η·∇ω term_i · P·v with v = ∇ω' L_dice(ω'): a central
//      difference of the terms at ω ± ε·P·v (two forward passes). λ = exp(ρ) stays
//      positive; Adam on ρ.
//   α  every `architecture_every` steps (on the full mixed network by default, see
//      architecture_path): the unsupervised loss (λ-weighted terms) of a
//      validation pair (plus latency_weight · E[forward ms]/reference when asked); after
//      each update α is projected back onto E[forward ms] ≤ budget (so is the starting
//      α); first order at ω, or second order (DARTS): at ω'
//      minus η times the finite-difference Hessian-vector product of L_train at ω ± ε·P·v.
//      (With a sampled ω path, ω' follows the step's sampled gradient while the product
//      is taken on α's path, the mixed network by default: the usual approximation
//      when weights are trained on sampled paths.)
//      α's and λ's updates see one random box of each pair (update_crop).
// Warm-up (the first warmup_fraction of steps): only ω moves. Sequential mode (as the
// published code): α with λ fixed for the first half of the steps after the warm-up,
// then λ on the derived architecture.
// Paths: "sampled" (GDAS; one candidate per edge per step, the same path for the step's
// three updates) or "mixed" (DARTS; every candidate, for small grids and tests).
// Faults: a non-finite loss or gradient, or ω's gradient norm spiking to spike_factor ×
// its running average, restores the last good state (kept every snapshot_every steps),
// halves the step sizes and goes on; more than max_rollbacks in a row stop the search
// with an error.
// Every step's randomness comes from (seed, step): a resumed search continues exactly.
// Batches and ranks: a step's pairs are `batch` slots, slot g drawn from (seed, step, g)
// whichever rank runs it (rank r runs g = r, r + world, ...); the step's path is drawn
// from (seed, step) alone, the same on every rank. Every quantity of the step is the
// mean over the slots: ω's gradient, v = ∇ω' of the validation Dice, the terms'
// finite differences, α's gradient (and its Hessian-vector product), summed across
// ranks (distribute()), so a step does not depend on the number of ranks.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "autoreg/registration/archive.h"
#include "autoreg/registration/collective.h"
#include "autoreg/registration/guarded_run.h"
#include "autoreg/registration/model_file.h"
#include "autoreg/registration/objective.h"
#include "autoreg/registration/stepped_run.h"
#include "autoreg/registration/training_pairs.h"
#include "autoreg/registration/training_set.h"
#include "autoreg/search/architecture_step.h"
#include "autoreg/search/choices.h"
#include "autoreg/search/objective_step.h"
#include "autoreg/search/op_cost.h"
#include "autoreg/search/search_options.h"
#include "autoreg/search/slot_sampler.h"
#include "autoreg/search/supernet.h"

namespace torch::optim {
class Adam;
}

namespace autoreg::search {

// The search's phases: the warm-up (ω alone), then α and λ together (joint mode), or
// first α and then λ with the architecture fixed (sequential mode).
enum class SearchPhase { Warmup, Search, Architecture, Objective };
// "warmup", "search", "architecture", "objective": the log's names.
const char* phase_name(SearchPhase phase);

// What one step did: a line of the search log.
struct SearchStep {
  int64_t step = 0;                 // steps done, this one included
  SearchPhase phase = SearchPhase::Warmup;
  double loss = 0;                  // the training loss
  std::array<double, registration::kObjectiveTerms> terms{};   // on the training pair
  std::array<double, registration::kObjectiveTerms> lambda{};  // after the step
  bool architecture_updated = false, objective_updated = false;
  double validation_loss = 0;       // α's objective without latency (when updated)
  double hyper_dice = 0;            // the validation pair's soft Dice loss at ω' (when λ updated)
  int64_t rollbacks = 0;            // so far
  double gradient_norm = 0;         // of ω's gradient, before clipping
  double gradient_average = 0;      // its running average in this phase (spike_factor)
  int64_t weight_voxels = 0;        // voxels of the image ω's step saw (a box with weight_crop)
  // Seconds spent on ω's gradient and update, λ's update and α's update in this step.
  double seconds_weights = 0, seconds_objective = 0, seconds_architecture = 0;
  double seconds_allreduce = 0;     // of those, summing across ranks (data-parallel)
};

// The run: ω (the supernet's weights, Adam), the step's path and the gradients through
// the unrolled ω step (gradients.cpp); the levels it drives: the pair sampler
// (slot_sampler.h), λ (objective_step.h) and α (architecture_step.h); the fault guard,
// checkpoints and ranks (registration/guarded_run.h, shared with training).
class Searcher : public registration::SteppedRun {
 public:
  // `info`: the grid, spacing and network options (its genotype: the operations of edges
  // that are not searched). `costs`: measured at info.grid.
  Searcher(registration::TrainingSet data, const registration::ModelInfo& info, SearchOptions options, OpCosts costs);
  ~Searcher() override;
  Searcher(const Searcher&) = delete;
  Searcher& operator=(const Searcher&) = delete;

  SearchStep step();
  int64_t steps_done() const override { return step_; }
  int64_t rollbacks() const override { return run_.guard().rollbacks(); }  // so far (kept in checkpoints)
  bool finished() const { return step_ >= options_.steps; }
  int64_t total_steps() const { return options_.steps; }
  // Another total (after resume(), which restores the checkpoint's): the schedule
  // follows it from here.
  void set_total_steps(int64_t steps) { options_.steps = steps; }
  SearchPhase phase() const;  // of the next step
  // The share of the search done, in [0, 1], for a search run by time rather than steps:
  // the warm-up, the sequential phases and the temperature then follow it instead of
  // step/steps. (Such a run does not repeat exactly when resumed: its times differ.)
  void set_progress(double fraction) { progress_ = fraction; }

  // softmax(α), 12×8 (CPU, double), and each edge's entropy (nats).
  at::Tensor probabilities() const { return architecture_->probabilities(); }
  std::array<double, kEdges> entropy() const { return architecture_->entropy(); }
  // The genotype the search would return now (within the budget).
  registration::Genotype derived() const;
  // E[forward ms] of the current distribution, and the derived genotype's prediction.
  double expected_forward_ms() const { return architecture_->expected_forward_ms(); }
  registration::ObjectiveWeights objective() const { return objective_.weights(); }
  // Mean Dice of the network being trained on the validation pairs: the derived genotype's
  // path on a sampled path; the mixed supernet (or the base path in its warm-up) else.
  double validate() override;
  // The same evaluation with its folding (a decoupled evaluation's line).
  registration::ValidationScores validation_scores();
  int64_t validation_pair_count() const override;

  const Supernet& supernet() const { return *supernet_; }
  const OpCosts& costs() const { return costs_; }
  const CandidateMask& allowed() const { return architecture_->allowed(); }

  // The gradients one step would use, at the current state, for the given pairs (ω's
  // gradient is computed on `train` first; nothing is updated): dDice(ω')/dλ (5, double),
  // and α's gradient (12×8; first or second order as the options say, latency included).
  at::Tensor objective_hypergradient(const registration::TrainingPair& train, const registration::TrainingPair& val);
  at::Tensor architecture_gradient(const registration::TrainingPair& train, const registration::TrainingPair& val);
  // Mutable access, for tests that set α or compare weights.
  Supernet& supernet() { return *supernet_; }
  // λ now (5, CPU double).
  at::Tensor lambda() const { return objective_.lambda(); }

  // Data-parallel: this searcher runs the slots of `collective`'s rank, and every step's
  // sums go across the ranks; rank 0's ω, α and λ are copied to the others now. Only
  // rank 0 writes checkpoints. Needs batch ≥ the ranks. `collective` outlives the searcher.
  void distribute(registration::Collective& collective) override;
  int rank() const override { return run_.rank(); }
  registration::Collective* collective() const override { return run_.collective(); }
  // Until the last checkpoint is on disk (they are written in the background).
  void finish_checkpoints() override { run_.finish_checkpoints(); }

  // Fields kept in checkpoints and restored by resume(): the caller's (e.g. the time
  // spent) and "entropy_start" (α's per-edge entropy before the first update).
  std::map<std::string, std::string> notes;

  // The whole state (ω, α, λ, the three optimisers, step, step-size scale, rollbacks),
  // written atomically (and kept as the state a fault rolls back to); resume() refuses a
  // checkpoint of other options, data or grid, naming what differs; it restores the total
  // number of steps too (set_total_steps changes it). restore() does the same from a
  // checkpoint already read (`path` names it in errors).
  void save_checkpoint(const std::string& path) override { run_.checkpoint(path); }
  void resume(const std::string& path) override;
  void restore(const registration::Archive& checkpoint, const std::string& path);

 private:
  struct Pass;
  SearchStep try_step();
  registration::Archive state() const;
  void load_state(const registration::Archive& a, const std::string& path);
  std::vector<std::pair<std::string, std::string>> fingerprint() const;
  void set_step_scale();
  double progress() const;

  // ω's side and the unrolled step (gradients.cpp).
  void prepare_path(bool alpha_grad);
  Pass run(const registration::TrainingPair& pair, const at::Tensor& lambda, bool with_dice);
  std::vector<at::Tensor> precondition(const std::vector<at::Tensor>& direction) const;
  std::vector<at::Tensor> step_direction() const;
  at::Tensor central(const std::vector<at::Tensor>& direction, const std::function<at::Tensor()>& f);
  double train_gradient(const std::vector<Slot>& slots, const at::Tensor& lambda, SearchStep& r);
  at::Tensor objective_gradient(const std::vector<Slot>& slots, const at::Tensor& lambda, double eta, SearchStep& r);
  at::Tensor architecture_gradient(const std::vector<Slot>& slots, const at::Tensor& lambda, double eta, SearchStep& r);
  // Sums `g` (gradients of `like`, some undefined) and `extra` across the ranks in one
  // call (nothing alone); after it an entry of g is undefined only if it was on every
  // rank. Then throws NonFinite if anything summed is not finite (every rank alike).
  void sum_across(std::vector<at::Tensor>& g, const std::vector<at::Tensor>& like, std::vector<at::Tensor>& extra) const;
  std::vector<at::Tensor> gradients(const at::Tensor& loss, const std::vector<at::Tensor>& inputs) const;
  std::vector<at::Tensor> move_weights(const std::vector<at::Tensor>& direction, double scale);
  void restore_weights(const std::vector<at::Tensor>& saved);

  registration::ModelInfo info_;
  SearchOptions options_;
  OpCosts costs_;
  SlotSampler sampler_;
  ObjectiveStep objective_;
  at::Device device_;
  at::ScalarType dtype_;
  std::unique_ptr<Supernet> supernet_;
  std::unique_ptr<ArchitectureStep> architecture_;  // on the supernet's α
  std::unique_ptr<torch::optim::Adam> weights_adam_;
  std::optional<registration::Genotype> fixed_genotype_;  // sequential mode, objective phase
  bool warming_up_ = false;         // this step trains the base path (warmup_on_base)
  int64_t step_ = 0;
  bool injected_ = false, spiked_ = false;
  std::optional<double> progress_;
  mutable double allreduce_seconds_ = 0;  // this step's, so far
  registration::GuardedRun run_;
};

}  // namespace autoreg::search
