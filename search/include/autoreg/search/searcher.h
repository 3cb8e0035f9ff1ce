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
#include "autoreg/registration/checkpoint_writer.h"
#include "autoreg/registration/collective.h"
#include "autoreg/registration/model_file.h"
#include "autoreg/registration/objective.h"
#include "autoreg/registration/fault_guard.h"
#include "autoreg/registration/training_set.h"
#include "autoreg/registration/training_pairs.h"
#include "autoreg/search/choices.h"
#include "autoreg/search/op_cost.h"
#include "autoreg/search/supernet.h"

namespace torch::optim {
class Adam;
}

namespace autoreg::search {

struct SearchOptions {
  int64_t steps = 1000;             // search steps, warm-up included
  // Pair slots per step over all ranks (the global batch; the class comment). Slot 0
  // draws as a step did before batches, so a batch of 1 is the search it was.
  int64_t batch = 1;
  bool async_checkpoints = true;    // written by a background thread (checkpoint_writer.h)
  double warmup_fraction = 0.5;     // first steps in which only ω moves (a training step's cost)
  // The warm-up trains the base genotype's path (its shared kernels' centres: every
  // candidate inherits them, mixed_edge.h) instead of sampled paths, which from random
  // weights train nothing (a sampled supernet's field shrank to zero on OASIS-TRT).
  bool warmup_on_base = true;
  // α's starting logit of the base genotype's candidate on each searched edge (the others
  // 0): > 0 makes sampled paths variations of the warmed-up base network.
  double base_logit = 3;
  Mode mode = Mode::Joint;
  Order order = Order::First;       // α's gradient
  // ω's path: mixed (DARTS: every allowed candidate, weighted by softmax(α)) or sampled
  // (GDAS: one candidate per edge and step, about one network's cost). Mixed by default:
  // on OASIS-TRT a sampled supernet did not train (docs/search.md: its NCC loss stayed
  // where it started, or, warmed up on the base path, rose back within 50 steps and the
  // base network's validation Dice fell to 0.14), the mixed one went on learning as the
  // default network does, at ~7× its step time.
  Path path = Path::Mixed;
  // α's gradient: "mixed" (DARTS: every allowed candidate runs, so each gets its own
  // ∂L/∂w_k and the softmax compares them) or "sampled" (GDAS: the step's path, straight
  // through; one candidate per edge, far less signal per update).
  Path architecture_path = Path::Mixed;
  // all | deformation | none (only λ is searched, on the base genotype: the second stage
  // of a search whose architecture was found on a coarser proxy grid)
  EdgeSet edges = EdgeSet::All;
  // α's and λ's updates see a random box of the pairs, this share of each axis (rounded
  // down to a multiple of 4; 1: whole volumes): the losses are means over voxels, so a
  // box estimates them, at a fraction of the cost of the mixed network.
  double update_crop = 0.6;
  // ω's steps on the supernet (after the warm-up) see a random box of the training pair,
  // this share of each axis (1: whole volumes). Patch training, as "partial channels"
  // (PC-DARTS, Xu et al. 2020) but over voxels: the mixed network's cost falls with the
  // box's volume (0.6 per axis: 0.22 of it). The warm-up trains on whole volumes. With
  // warmup_fraction 0.5 a search costs 1.85–2.1× training the default network as long
  // (bench/search_cost.py); on OASIS-TRT two seeds at 2 mm found what the whole-volume
  // search at 4 mm had found (D2_0 → conv_1x1).
  double weight_crop = 0.6;
  int64_t architecture_every = 3;   // α updated every k-th step
  int64_t objective_every = 6;      // λ updated every k-th step
  double weight_lr = 1e-3;          // Adam on ω (train's recipe)
  double max_gradient_norm = 5;     // ω's gradient clipped to this norm (DARTS); 0: not clipped
  double architecture_lr = 2e-2;    // Adam on α
  // Adam's (coupled) weight decay on α, DARTS's 1e-3. With α starting at the base
  // genotype (base_logit) it pulls every edge towards uniform at Adam's normalised rate
  // whatever the signal (in the first OASIS-TRT search every edge's entropy rose); but
  // that search's genotype beat the default one at equal λ, and the one search without
  // decay diverged (docs/search.md), so it stays until a search without it is scored.
  double architecture_weight_decay = 1e-3;
  double objective_lr = 3e-2;       // Adam on ρ = log λ
  // λ's overall scale (the geometric mean of the searched weights) stays where it started:
  // λ's updates change only the mix of the searched terms, not their weight against the
  // fixed soft-Dice term. One unrolled step rewards shrinking every term but Dice (a
  // step more Dice-driven raises the validation Dice at once: short-horizon bias, Wu et
  // al. 2018); on OASIS-TRT every searched weight fell at both grids. false: free (the
  // component along "all λ up" kept). With a single searched term the scale is all there
  // is, and it stays free.
  bool objective_scale_fixed = true;
  double tau_max = 10, tau_min = 0.1;  // GDAS temperature, linear over the search steps
  double dice_weight = 1.0;         // soft Dice of training pairs in L_train (not searched)
  registration::ObjectiveWeights initial_objective{{1.0, 0.5, 0.25, 0.0, 1.0}};
  // The terms whose λ is searched; the others keep their initial weight (0: not computed).
  // MIND-SSC is for multimodal pairs and costs as much as the network's pass: off unless asked.
  std::array<bool, registration::kObjectiveTerms> searched_terms{true, true, true, false, true};
  // On E[forward ms] / the base genotype's predicted ms, always on. 0 by default: Adam
  // normalises each α entry's gradient, so even a small term that always points the
  // same way outweighs the noisier registration loss and drives every edge to its
  // cheapest candidate. The budget below is the cost-awareness that is on by default.
  double latency_weight = 0;
  // > 0: a forward-time budget: candidates that cannot fit it are masked, E[forward ms]
  // is kept within it by projection, and the derived genotype is made to fit it.
  double budget_ms = 0;
  bool augment = true;
  double deformation_voxels = 2.0;
  uint64_t seed = 0;
  std::string device = "cpu";
  int64_t max_rollbacks = 5;        // faulty steps in a row before giving up
  // A step whose ω gradient norm (before clipping) exceeds this many times its running
  // average in the phase is a fault, rolled back like a non-finite one: clipping bounds
  // one step, not a run of them, and a diverging supernet (gradient norm 0.4 → 16 → 900
  // in 20 steps on OASIS-TRT) warps everything away long before anything is non-finite.
  // Checked after FaultGuard::kSpikeSamples steps of a phase. 0: off.
  double spike_factor = 20;
  int64_t snapshot_every = 10;      // steps between in-memory good states
  // The virtual step ω' follows Adam's preconditioner (false: a plain gradient step, as
  // DARTS with SGD).
  bool precondition = true;
  int64_t inject_nan_at = -1;       // tests: every weight is NaN before this step (1-based), once
  int64_t inject_spike_at = -1;     // tests: ω's loss × 10⁴ at this step (1-based), once
  bool float64 = false;             // tests: weights, α and pairs in float64 (finite-difference checks)
};

// What one step did: a line of the search log.
struct SearchStep {
  int64_t step = 0;                 // steps done, this one included
  std::string phase;                // warmup | search | architecture | objective
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

class Searcher {
 public:
  // `info`: the grid, spacing and network options (its genotype: the operations of edges
  // that are not searched). `costs`: measured at info.grid.
  Searcher(registration::TrainingSet data, const registration::ModelInfo& info, SearchOptions options, OpCosts costs);
  ~Searcher();

  SearchStep step();
  int64_t steps_done() const { return step_; }
  int64_t rollbacks() const { return guard_.rollbacks(); }  // so far (kept in checkpoints)
  bool finished() const { return step_ >= options_.steps; }
  int64_t total_steps() const { return options_.steps; }
  // Another total (after resume(), which restores the checkpoint's): the schedule
  // follows it from here.
  void set_total_steps(int64_t steps) { options_.steps = steps; }
  std::string phase() const;  // of the next step
  // The share of the search done, in [0, 1], for a search run by time rather than steps:
  // the warm-up, the sequential phases and the temperature then follow it instead of
  // step/steps. (Such a run does not repeat exactly when resumed: its times differ.)
  void set_progress(double fraction) { progress_ = fraction; }

  // softmax(α), 12×8 (CPU, double), and each edge's entropy (nats).
  at::Tensor probabilities() const;
  std::array<double, kEdges> entropy() const;
  // The genotype the search would return now (within the budget).
  registration::Genotype derived() const;
  // E[forward ms] of the current distribution, and the derived genotype's prediction.
  double expected_forward_ms() const;
  registration::ObjectiveWeights objective() const;
  // Mean Dice of the network being trained on the validation pairs: the derived genotype's
  // path on a sampled path; the mixed supernet (or the base path in its warm-up) else.
  double validate();
  // The same evaluation with its folding (a decoupled evaluation's line).
  registration::ValidationScores validation_scores();
  int64_t validation_pair_count() const;

  const Supernet& supernet() const { return *supernet_; }
  const OpCosts& costs() const { return costs_; }
  const CandidateMask& allowed() const { return allowed_; }
  double reference_ms() const { return reference_ms_; }

  // The gradients one step would use, at the current state, for the given pairs (ω's
  // gradient is computed on `train` first; nothing is updated): dDice(ω')/dλ (5, double),
  // and α's gradient (12×8; first or second order as the options say, latency included).
  at::Tensor objective_hypergradient(const registration::TrainingPair& train, const registration::TrainingPair& val);
  at::Tensor architecture_gradient(const registration::TrainingPair& train, const registration::TrainingPair& val);
  // Mutable access, for tests that set α or compare weights.
  Supernet& supernet() { return *supernet_; }
  // λ now (5, CPU double).
  at::Tensor lambda() const;

  // Data-parallel: this searcher runs the slots of `collective`'s rank, and every step's
  // sums go across the ranks; rank 0's ω, α and λ are copied to the others now. Only
  // rank 0 writes checkpoints. Needs batch ≥ the ranks. `collective` outlives the searcher.
  void distribute(registration::Collective& collective);
  int rank() const { return collective_ ? collective_->rank() : 0; }
  registration::Collective* collective() const { return collective_; }
  // Until the last checkpoint is on disk (they are written in the background).
  void finish_checkpoints() { writer_.wait(); }

  // Fields kept in checkpoints and restored by resume(): the caller's (e.g. the time
  // spent) and "entropy_start" (α's per-edge entropy before the first update).
  std::map<std::string, std::string> notes;

  // The whole state (ω, α, λ, the three optimisers, step, step-size scale, rollbacks),
  // written atomically (and kept as the state a fault rolls back to); resume() refuses a
  // checkpoint of other options, data or grid, naming what differs; it restores the total
  // number of steps too (set_total_steps changes it). restore() does the same from a
  // checkpoint already read (`path` names it in errors).
  void save_checkpoint(const std::string& path);
  void resume(const std::string& path);
  void restore(const registration::Archive& checkpoint, const std::string& path);

 private:
  struct Pass;
  // One slot's pairs of a step: whole (train, val), the boxes α and λ see, and ω's pair.
  struct Slot {
    registration::TrainingPair train, val, train_box, val_box, weight_pair;
  };
  std::vector<Slot> draw_slots(std::mt19937_64& step_rng, bool crop_weights) const;
  SearchStep try_step();
  registration::Archive state() const;
  void load_state(const registration::Archive& a, const std::string& path);
  std::vector<std::pair<std::string, std::string>> fingerprint() const;
  void prepare_path(bool alpha_grad);
  bool warming_up_ = false;         // this step trains the base path (warmup_on_base)
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
  at::Tensor latency_loss(const at::Tensor& probabilities) const;
  void keep_within_budget();
  void set_learning_rates();

  registration::TrainingSet data_;
  registration::ModelInfo info_;
  SearchOptions options_;
  OpCosts costs_;
  at::Device device_;
  at::ScalarType dtype_;
  std::vector<registration::Subject> labelled_validation_;
  std::unique_ptr<Supernet> supernet_;
  CandidateMask allowed_{};
  double reference_ms_ = 1;
  at::Tensor rho_;  // log λ, 5, CPU float64
  std::unique_ptr<torch::optim::Adam> weights_adam_, architecture_adam_, objective_adam_;
  std::optional<registration::Genotype> fixed_genotype_;  // sequential mode, objective phase
  registration::FaultGuard guard_;  // spike_factor, max_rollbacks; step sizes' scale
  int64_t step_ = 0;
  bool injected_ = false, spiked_ = false;
  void keep_objective_scale(double mean_log_before);
  double mean_searched_log_lambda() const;
  int searched_term_count() const;
  std::optional<double> progress_;
  double progress() const;
  mutable registration::Snapshots snapshots_;
  registration::Collective* collective_ = nullptr;
  mutable double allreduce_seconds_ = 0;  // this step's, so far
  registration::CheckpointWriter writer_;
};

}  // namespace autoreg::search
