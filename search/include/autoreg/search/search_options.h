// The search's options (searcher.h has what they steer): its steps and batch, its
// phases and paths, the three step sizes, the objective's starting weights and which
// terms are searched, the forward-time budget, the fault guard, and test hooks.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "autoreg/registration/objective.h"
#include "autoreg/search/choices.h"

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

}  // namespace autoreg::search
