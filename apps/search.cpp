// autoreg search --manifest M --out DIR [--budget-minutes T | --steps N] [--retrain-steps N]
//                [--grid DxHxW] [--spacing MM] [--mode joint|sequential] [--order first|second]
//                [--edges all|deformation] [--path sampled|mixed] [--max-forward-ms X] ...
//                [--device cpu|cuda] [--threads N] [--seed S] [--resume]
//                [--batch G] [--nproc N [--max-restarts R]] [--validation decoupled|inline|off] [--evaluate]
//
// The triple-level search (search/searcher.h) on a manifest's subjects (preprocessed
// onto the model grid as `train` does): `train` rows train ω, labelled `val` rows drive
// α and λ. Then the derived network is retrained from scratch with the searched λ. DIR
// receives genotype.txt, genotype.json, model.autoreg, search.log.jsonl, retrain.log.jsonl,
// report.html, op_cost.json and the checkpoints (search.ckpt, retrain.ckpt) that
// --resume continues from. SIGINT/SIGTERM write a checkpoint and exit with 4. Under
// torchrun or srun (or --nproc) the ranks search (and retrain) data-parallel, rank 0
// alone writing; a watcher process (this command with --evaluate) evaluates the
// checkpoints, decoupled from the search. The job is pipeline::search (search_job.h);
// this file parses its settings.
#include <tclap/CmdLine.h>

#include <string>
#include <vector>

#include "autoreg/pipeline/search_job.h"
#include "autoreg/pipeline/run_loop.h"
#include "common_args.h"
#include "parse.h"
#include "exit_codes.h"
#include "options.h"
#include "scale_out.h"

namespace autoreg::apps {

int run_search(int argc, char** argv) {
  const pipeline::SearchSettings d;  // the defaults
  TCLAP::CmdLine cmd("Search the network architecture and the training objective for a dataset (CSV manifest: "
                     "image,labels,split; train rows train the weights, labelled val rows choose the architecture "
                     "and the objective), then retrain the derived network and write DIR/model.autoreg.", ' ', "0.1");
  TCLAP::ValueArg<std::string> manifest("", "manifest", "CSV manifest of the dataset (needs labelled val rows)", true, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> out("", "out", "output folder (created): genotype.txt, genotype.json, model.autoreg, report.html, logs, checkpoints", true, "", "DIR", cmd);
  TCLAP::ValueArg<double> budget("", "budget-minutes", "instead of --steps: wall-clock minutes for search and retraining together (half each unless --retrain-steps)", false, 0, "T", cmd);
  TCLAP::ValueArg<int64_t> steps("", "steps", "search steps (default 500)", false, d.kSteps, "N", cmd);
  TCLAP::ValueArg<int64_t> retrain_steps("", "retrain-steps", "retraining steps of the derived network (default 1000, or the rest of --budget-minutes; 0: no retraining, no model)", false, d.kRetrainSteps, "N", cmd);
  TCLAP::ValueArg<std::string> grid("", "grid", "model grid DxHxW at --spacing (default: the reference's foreground box + 8 mm)", false, "", "DxHxW", cmd);
  TCLAP::ValueArg<double> spacing("", "spacing", "model grid spacing in mm (default 2)", false, d.spacing, "MM", cmd);
  Choices modes(search::kModeNames), orders(search::kOrderNames), edge_sets(search::kEdgeSetNames), paths(search::kPathNames);
  TCLAP::ValueArg<std::string> mode("", "mode", "joint (default: ω, α and λ in one loop) or sequential (α, then λ on the derived architecture)", false, search::to_string(d.search.mode), &modes.allowed, cmd);
  TCLAP::ValueArg<std::string> order("", "order", "α's gradient: first (default) or second order (finite-difference Hessian-vector product)", false, search::to_string(d.search.order), &orders.allowed, cmd);
  TCLAP::ValueArg<std::string> edges("", "edges", "searched edges: all (default, 12), deformation (the 6 D-cell edges) or none (only λ, on --genotype)", false, search::to_string(d.search.edges), &edge_sets.allowed, cmd);
  TCLAP::ValueArg<std::string> genotype("", "genotype", "the base genotype: the operations of edges that are not searched, and α's starting point with --base-logit (default: the default network's)", false, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> path("", "path", "the weights' path: mixed (default, DARTS: every allowed candidate, ~7x a network's step) or sampled (GDAS: one candidate per edge and step; did not train on OASIS-TRT, see docs/search.md)", false, search::to_string(d.search.path), &paths.allowed, cmd);
  TCLAP::ValueArg<std::string> arch_path("", "arch-path", "α's gradient: mixed (default, DARTS: every allowed candidate) or sampled (GDAS straight-through on the step's path)", false, search::to_string(d.search.architecture_path), &paths.allowed, cmd);
  TCLAP::ValueArg<double> max_forward("", "max-forward-ms", "forward-time budget of the derived network at the model grid on this machine (default: the default network's; 0: none)", false, 0, "X", cmd);
  TCLAP::ValueArg<double> latency_weight("", "latency-weight", "weight of the expected forward time (÷ the default network's) in α's objective, always on (default 0: only the budget counts)", false, d.search.latency_weight, "W", cmd);
  TCLAP::ValueArg<double> update_crop("", "update-crop", "α and λ updates see a random box of the pairs, this share of each axis (default 0.6; 1: whole volumes)", false, d.search.update_crop, "F", cmd);
  TCLAP::ValueArg<double> weight_crop("", "weight-crop", "after the warm-up the weights' steps on the supernet see a random box of the training pair, this share of each axis (default 0.6: a fifth of the mixed network's cost; 1: whole volumes)", false, d.search.weight_crop, "F", cmd);
  TCLAP::ValueArg<int64_t> arch_every("", "arch-every", "update α every k-th step (default 3)", false, d.search.architecture_every, "K", cmd);
  TCLAP::ValueArg<int64_t> objective_every("", "objective-every", "update λ every k-th step (default 6)", false, d.search.objective_every, "K", cmd);
  TCLAP::ValueArg<double> warmup("", "warmup", "share of the search in which only the weights move (default 0.5)", false, d.search.warmup_fraction, "F", cmd);
  TCLAP::ValueArg<double> base_logit("", "base-logit", "starting α logit of the default genotype's operation on every searched edge (default 3: a probability of 0.74 against 0.04 for each other candidate; 0: all equally likely)", false, d.search.base_logit, "L", cmd);
  TCLAP::ValueArg<double> lr("", "lr", "Adam learning rate of the weights, search and retraining (default 1e-3)", false, d.search.weight_lr, "R", cmd);
  TCLAP::ValueArg<double> max_gradient_norm("", "max-gradient-norm", "clip the weights' gradient to this norm (default 5, as DARTS; 0: no clipping)", false, d.search.max_gradient_norm, "N", cmd);
  TCLAP::ValueArg<double> arch_lr("", "arch-lr", "Adam learning rate of α (default 2e-2)", false, d.search.architecture_lr, "R", cmd);
  TCLAP::ValueArg<double> arch_decay("", "arch-weight-decay", "Adam weight decay of α (default 1e-3, DARTS's; it also pulls α from --base-logit back towards uniform)", false, d.search.architecture_weight_decay, "D", cmd);
  TCLAP::ValueArg<double> objective_lr("", "objective-lr", "Adam learning rate of log λ (default 3e-2)", false, d.search.objective_lr, "R", cmd);
  std::vector<std::string> scales = {"fixed", "free"};
  TCLAP::ValuesConstraint<std::string> scale_allowed(scales);
  TCLAP::ValueArg<std::string> objective_scale("", "objective-scale", "fixed (default: λ's updates change the mix of the searched terms, not their overall weight against soft Dice; one unrolled step is biased towards shrinking them all) or free", false, d.search.objective_scale_fixed ? "fixed" : "free", &scale_allowed, cmd);
  TCLAP::ValueArg<double> dice_weight("", "dice-weight", "weight of soft Dice on training label maps (default 1; 0 = unsupervised)", false, d.search.dice_weight, "W", cmd);
  TCLAP::ValueArg<std::string> terms("", "terms", "the objective terms whose weights are searched (default ncc9,ncc7_half,ncc5_quarter,smoothness; add mind for multimodal data, with a positive starting weight in --initial-objective; none: λ stays at --initial-objective)", false, "", "LIST", cmd);
  TCLAP::ValueArg<std::string> initial("", "initial-objective", "starting λ (default ncc9=1,ncc7_half=0.5,ncc5_quarter=0.25,smoothness=1)", false, "", "WEIGHTS", cmd);
  TCLAP::ValueArg<std::string> op_cost("", "op-cost", "operation costs measured before (JSON, from an earlier search's op_cost.json at the same grid)", false, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> cache("", "cache", "folder for preprocessed volumes (default DIR/cache)", false, "", "DIR", cmd);
  TCLAP::SwitchArg no_augment("", "no-augment", "no random deformations and intensity changes", cmd, false);
  TCLAP::ValueArg<int64_t> checkpoint_every("", "checkpoint-every", "search steps between checkpoints (default 25; retraining: 4×)", false, d.checkpoint_every, "N", cmd);
  TCLAP::ValueArg<int64_t> validate_every("", "validate-every", "with --validation inline: steps between validations (default 50)", false, d.validate_every, "N", cmd);
  TCLAP::ValueArg<double> max_unreadable("", "max-unreadable", "share of manifest rows that may be unreadable (reported and skipped; default 0.2)", false, d.max_unreadable, "F", cmd);
  TCLAP::ValueArg<int64_t> max_rollbacks("", "max-rollbacks", "faulty steps in a row (non-finite or a gradient spike, each rolled back at half the step sizes) before giving up (default 5)", false, d.search.max_rollbacks, "K", cmd);
  TCLAP::ValueArg<double> max_spike("", "max-gradient-spike", "a weight gradient norm over this many times its running average is a fault, rolled back at half the step sizes (default 20; 0: off)", false, d.search.spike_factor, "X", cmd);
  DeviceArg device(cmd);
  ThreadsArg threads(cmd);
  TCLAP::ValueArg<int64_t> batch("", "batch", "pairs per step over all ranks, the global batch, search and retraining (default: one per rank; resumed: the checkpoint's)", false, 1, "G", cmd);
  Choices validations(pipeline::kValidationNames);
  TCLAP::ValueArg<std::string> validation("", "validation", "decoupled (default: a separate process evaluates each checkpoint of the search, DIR/search.validation.jsonl, and of the retraining, DIR/retrain.validation.jsonl, and keeps the best, DIR/search.best.ckpt and DIR/retrain.best.autoreg), inline (every --validate-every steps; the search waits) or off", false, pipeline::to_string(d.validation), &validations.allowed, cmd);
  TCLAP::ValueArg<int> validation_threads("", "validation-threads", "threads of the decoupled validation process (default 1)", false, d.validation_threads, "T", cmd);
  TCLAP::SwitchArg evaluate("", "evaluate", "evaluate this search's checkpoints as they are written instead of searching (the decoupled validation: the search starts one itself; run the search's command with --evaluate, e.g. on another machine sharing DIR): DIR/search.validation.jsonl, the best as DIR/search.best.ckpt", cmd, false);
  TCLAP::SwitchArg sync_checkpoints("", "sync-checkpoints", "write checkpoints in the search's thread (default: in the background)", cmd, false);
  ScaleOutArgs scale(cmd);
  TCLAP::ValueArg<uint64_t> seed("", "seed", "random seed (default 0)", false, 0, "S", cmd);
  TCLAP::SwitchArg resume("", "resume", "continue the search (or its retraining) in DIR from its checkpoint", cmd, false);
  cmd.setExceptionHandling(false);
  parse(cmd, argc, argv);

  pipeline::SearchSettings s;
  s.manifest = manifest.getValue();
  s.out = out.getValue();
  if (budget.isSet()) s.budget_minutes = budget.getValue();
  if (steps.isSet()) s.steps = steps.getValue();
  if (retrain_steps.isSet()) s.retrain_steps = retrain_steps.getValue();
  if (grid.isSet()) s.grid = parse_grid(grid.getValue());
  s.spacing = spacing.getValue();
  s.search.mode = search::parse_mode(mode.getValue());  // the values TCLAP allowed: no throw
  s.search.order = search::parse_order(order.getValue());
  s.search.edges = search::parse_edge_set(edges.getValue());
  s.genotype = genotype.getValue();
  s.search.path = search::parse_path(path.getValue());
  s.search.architecture_path = search::parse_path(arch_path.getValue());
  if (max_forward.isSet()) s.max_forward_ms = max_forward.getValue();
  s.search.latency_weight = latency_weight.getValue();
  s.search.update_crop = update_crop.getValue();
  s.search.weight_crop = weight_crop.getValue();
  s.search.architecture_every = arch_every.getValue();
  s.search.objective_every = objective_every.getValue();
  s.search.warmup_fraction = warmup.getValue();
  s.search.base_logit = base_logit.getValue();
  s.search.weight_lr = lr.getValue();
  s.search.max_gradient_norm = max_gradient_norm.getValue();
  s.search.architecture_lr = arch_lr.getValue();
  s.search.architecture_weight_decay = arch_decay.getValue();
  s.search.objective_lr = objective_lr.getValue();
  s.search.objective_scale_fixed = objective_scale.getValue() == "fixed";
  s.search.dice_weight = dice_weight.getValue();
  s.terms = terms.getValue();
  s.initial_objective = initial.getValue();
  s.op_cost = op_cost.getValue();
  s.cache = cache.getValue();
  s.search.augment = !no_augment.getValue();
  s.checkpoint_every = checkpoint_every.getValue();
  s.validate_every = validate_every.getValue();
  s.max_unreadable = max_unreadable.getValue();
  s.search.max_rollbacks = max_rollbacks.getValue();
  s.search.spike_factor = max_spike.getValue();
  s.search.device = device.value();
  s.threads = threads.value();
  if (batch.isSet()) s.batch = batch.getValue();
  s.validation = pipeline::parse_validation(validation.getValue());
  s.validation_threads = validation_threads.getValue();
  s.evaluate = evaluate.getValue();
  s.search.async_checkpoints = !sync_checkpoints.getValue();
  s.scale = scale.settings();
  s.search.seed = seed.getValue();
  s.resume = resume.getValue();
  if (s.scale.nproc == 0) threads.apply();  // a supervisor's ranks get theirs
  pipeline::install_stop_handlers();
  if (s.evaluate) {
    pipeline::evaluate_search(s);
  } else {
    pipeline::search(s);
  }
  return kOk;
}

}  // namespace autoreg::apps
