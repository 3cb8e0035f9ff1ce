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
// checkpoints, decoupled from the search (search_evaluation.h).
#include <tclap/CmdLine.h>

#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <memory>
#include <string>

#include "autoreg/io/manifest.h"
#include "autoreg/ops.h"
#include "autoreg/io/volume.h"
#include "autoreg/parallel/process.h"
#include "autoreg/parallel/worker.h"
#include "autoreg/pipeline/dataset.h"
#include "autoreg/registration/model_file.h"
#include "autoreg/registration/train.h"
#include "autoreg/search/op_cost.h"
#include "autoreg/search/report.h"
#include "autoreg/search/searcher.h"
#include "common_args.h"
#include "exit_codes.h"
#include "options.h"
#include "run_log.h"
#include "scale_out.h"
#include "search_evaluation.h"
#include "search_stages.h"
#include "training_loop.h"

namespace autoreg::apps {
namespace {

namespace fs = std::filesystem;

int search_main(SearchParams p) {
  const bool lead = p.lead;
  const bool made_out = !fs::exists(p.out);
  fs::create_directories(p.out);
  const Paths out{fs::path(p.out)};
  const std::string checkpoint = out.file("search.ckpt");
  if (p.resume && !fs::exists(checkpoint)) throw UsageError("--resume: no checkpoint " + checkpoint + " to resume from");
  if (!p.resume && (fs::exists(checkpoint) || fs::exists(out.file("retrain.ckpt")))) {
    throw UsageError(p.out + " holds a search already: --resume continues it, or choose another --out");
  }
  if (!p.op_cost.empty() && !fs::exists(p.op_cost)) throw io::IoError(p.op_cost + ": no such operation-cost file");
  const int world = p.collective ? p.collective->world() : 1;
  default_batch(p, checkpoint, world);
  if (p.options.batch < world) {
    throw UsageError("--batch " + std::to_string(p.options.batch) + ": at least one pair per rank (" +
                     std::to_string(world) + " ranks)");
  }
  registration::TrainingSet data;
  try {
    data = load_data(p);
  } catch (const io::IoError&) {
    std::error_code ec;
    if (made_out && lead) fs::remove_all(p.out, ec);  // bad input: leave nothing behind
    throw;
  }
  const search::OpCosts costs = operation_costs(p, out);
  const double default_ms = apply_budget(p, costs);

  nlohmann::json summary;
  {
    std::unique_ptr<search::Searcher> made;
    try {
      made = std::make_unique<search::Searcher>(data, p.info, p.options, costs);
    } catch (const std::invalid_argument& e) {
      throw io::IoError(p.manifest + ": " + e.what());
    }
    search::Searcher& searcher = *made;
    if (p.collective) {
      searcher.distribute(*p.collective);
      if (lead) std::fprintf(stderr, "data-parallel: %d ranks, %ld pairs per step (global batch)\n", world, long(p.options.batch));
    }
    double earlier = 0;  // search seconds before this run
    if (p.resume) {
      searcher.resume(checkpoint);
      if (p.steps_given) searcher.set_total_steps(p.options.steps);
      earlier = searcher.notes.count("seconds") ? std::stod(searcher.notes["seconds"]) : 0;
      if (lead) {
        cut_log_to(out.file("search.log.jsonl"), searcher.steps_done());
        std::fprintf(stderr, "resumed the search from %s at step %ld of %ld\n", checkpoint.c_str(),
                     long(searcher.steps_done()), long(searcher.total_steps()));
      }
    }
    if (!searcher.notes.count("finished")) {
      // Validation decoupled by default: a watcher process evaluates the checkpoints.
      std::unique_ptr<ValidationProcess> watcher;
      if (lead && p.validation == "decoupled" && searcher.validation_pair_count() > 0) {
        watcher = start_search_evaluation(p, out, !p.resume);
        p.evaluations = watcher->results();
      }
      search_loop(searcher, p, out, earlier);
      if (watcher) {
        finish_search_evaluation(*watcher, searcher, out);
        // The last evaluation's Dice kept with the checkpoint (a resumed finished search
        // exports it again).
        searcher.save_checkpoint(checkpoint);
        searcher.finish_checkpoints();
      }
    }
    summary = export_search(searcher, p, out, default_ms);
  }  // the supernet's memory goes before retraining
  if (p.retrain_steps_given && p.retrain_steps == 0) {
    if (lead) std::fprintf(stderr, "--retrain-steps 0: no model written\n");
    return kOk;
  }
  // Rank 0's last evaluation and its forward-time measurement may outlast a collective's
  // timeout: the others wait at the barrier (2 hours), not in the retraining's broadcast.
  if (p.collective) p.collective->barrier();
  retrain(p, out, data, summary);
  return kOk;
}

}  // namespace

int run_search(int argc, char** argv) {
  TCLAP::CmdLine cmd("Search the network architecture and the training objective for a dataset (CSV manifest: "
                     "image,labels,split; train rows train the weights, labelled val rows choose the architecture "
                     "and the objective), then retrain the derived network and write DIR/model.autoreg.", ' ', "0.1");
  TCLAP::ValueArg<std::string> manifest("", "manifest", "CSV manifest of the dataset (needs labelled val rows)", true, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> out("", "out", "output folder (created): genotype.txt, genotype.json, model.autoreg, report.html, logs, checkpoints", true, "", "DIR", cmd);
  TCLAP::ValueArg<double> budget("", "budget-minutes", "instead of --steps: wall-clock minutes for search and retraining together (half each unless --retrain-steps)", false, 0, "T", cmd);
  TCLAP::ValueArg<int64_t> steps("", "steps", "search steps (default 500)", false, 500, "N", cmd);
  TCLAP::ValueArg<int64_t> retrain_steps("", "retrain-steps", "retraining steps of the derived network (default 1000, or the rest of --budget-minutes; 0: no retraining, no model)", false, 1000, "N", cmd);
  TCLAP::ValueArg<std::string> grid("", "grid", "model grid DxHxW at --spacing (default: the reference's foreground box + 8 mm)", false, "", "DxHxW", cmd);
  TCLAP::ValueArg<double> spacing("", "spacing", "model grid spacing in mm (default 2)", false, 2.0, "MM", cmd);
  std::vector<std::string> modes = {"joint", "sequential"}, orders = {"first", "second"}, edge_sets = {"all", "deformation", "none"},
                           paths = {"sampled", "mixed"};
  TCLAP::ValuesConstraint<std::string> mode_allowed(modes), order_allowed(orders), edges_allowed(edge_sets),
      path_allowed(paths);
  TCLAP::ValueArg<std::string> mode("", "mode", "joint (default: ω, α and λ in one loop) or sequential (α, then λ on the derived architecture)", false, "joint", &mode_allowed, cmd);
  TCLAP::ValueArg<std::string> order("", "order", "α's gradient: first (default) or second order (finite-difference Hessian-vector product)", false, "first", &order_allowed, cmd);
  TCLAP::ValueArg<std::string> edges("", "edges", "searched edges: all (default, 12), deformation (the 6 D-cell edges) or none (only λ, on --genotype)", false, "all", &edges_allowed, cmd);
  TCLAP::ValueArg<std::string> genotype("", "genotype", "the base genotype: the operations of edges that are not searched, and α's starting point with --base-logit (default: the default network's)", false, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> path("", "path", "the weights' path: mixed (default, DARTS: every allowed candidate, ~7x a network's step) or sampled (GDAS: one candidate per edge and step; did not train on OASIS-TRT, see docs/search.md)", false, "mixed", &path_allowed, cmd);
  TCLAP::ValueArg<std::string> arch_path("", "arch-path", "α's gradient: mixed (default, DARTS: every allowed candidate) or sampled (GDAS straight-through on the step's path)", false, "mixed", &path_allowed, cmd);
  TCLAP::ValueArg<double> max_forward("", "max-forward-ms", "forward-time budget of the derived network at the model grid on this machine (default: the default network's; 0: none)", false, 0, "X", cmd);
  TCLAP::ValueArg<double> latency_weight("", "latency-weight", "weight of the expected forward time (÷ the default network's) in α's objective, always on (default 0: only the budget counts)", false, 0, "W", cmd);
  TCLAP::ValueArg<double> update_crop("", "update-crop", "α and λ updates see a random box of the pairs, this share of each axis (default 0.6; 1: whole volumes)", false, 0.6, "F", cmd);
  TCLAP::ValueArg<double> weight_crop("", "weight-crop", "after the warm-up the weights' steps on the supernet see a random box of the training pair, this share of each axis (default 0.6: a fifth of the mixed network's cost; 1: whole volumes)", false, 0.6, "F", cmd);
  TCLAP::ValueArg<int64_t> arch_every("", "arch-every", "update α every k-th step (default 3)", false, 3, "K", cmd);
  TCLAP::ValueArg<int64_t> objective_every("", "objective-every", "update λ every k-th step (default 6)", false, 6, "K", cmd);
  TCLAP::ValueArg<double> warmup("", "warmup", "share of the search in which only the weights move (default 0.5)", false, 0.5, "F", cmd);
  TCLAP::ValueArg<double> base_logit("", "base-logit", "starting α logit of the default genotype's operation on every searched edge (default 3: a probability of 0.74 against 0.04 for each other candidate; 0: all equally likely)", false, 3, "L", cmd);
  TCLAP::ValueArg<double> lr("", "lr", "Adam learning rate of the weights, search and retraining (default 1e-3)", false, 1e-3, "R", cmd);
  TCLAP::ValueArg<double> max_gradient_norm("", "max-gradient-norm", "clip the weights' gradient to this norm (default 5, as DARTS; 0: no clipping)", false, 5, "N", cmd);
  TCLAP::ValueArg<double> arch_lr("", "arch-lr", "Adam learning rate of α (default 2e-2)", false, 2e-2, "R", cmd);
  TCLAP::ValueArg<double> arch_decay("", "arch-weight-decay", "Adam weight decay of α (default 1e-3, DARTS's; it also pulls α from --base-logit back towards uniform)", false, 1e-3, "D", cmd);
  TCLAP::ValueArg<double> objective_lr("", "objective-lr", "Adam learning rate of log λ (default 3e-2)", false, 3e-2, "R", cmd);
  std::vector<std::string> scales = {"fixed", "free"};
  TCLAP::ValuesConstraint<std::string> scale_allowed(scales);
  TCLAP::ValueArg<std::string> objective_scale("", "objective-scale", "fixed (default: λ's updates change the mix of the searched terms, not their overall weight against soft Dice; one unrolled step is biased towards shrinking them all) or free", false, "fixed", &scale_allowed, cmd);
  TCLAP::ValueArg<double> dice_weight("", "dice-weight", "weight of soft Dice on training label maps (default 1; 0 = unsupervised)", false, 1.0, "W", cmd);
  TCLAP::ValueArg<std::string> terms("", "terms", "the objective terms whose weights are searched (default ncc9,ncc7_half,ncc5_quarter,smoothness; add mind for multimodal data, with a positive starting weight in --initial-objective; none: λ stays at --initial-objective)", false, "", "LIST", cmd);
  TCLAP::ValueArg<std::string> initial("", "initial-objective", "starting λ (default ncc9=1,ncc7_half=0.5,ncc5_quarter=0.25,smoothness=1)", false, "", "WEIGHTS", cmd);
  TCLAP::ValueArg<std::string> op_cost("", "op-cost", "operation costs measured before (JSON, from an earlier search's op_cost.json at the same grid)", false, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> cache("", "cache", "folder for preprocessed volumes (default DIR/cache)", false, "", "DIR", cmd);
  TCLAP::SwitchArg no_augment("", "no-augment", "no random deformations and intensity changes", cmd, false);
  TCLAP::ValueArg<int64_t> checkpoint_every("", "checkpoint-every", "search steps between checkpoints (default 25; retraining: 4×)", false, 25, "N", cmd);
  TCLAP::ValueArg<int64_t> validate_every("", "validate-every", "with --validation inline: steps between validations (default 50)", false, 50, "N", cmd);
  TCLAP::ValueArg<double> max_unreadable("", "max-unreadable", "share of manifest rows that may be unreadable (reported and skipped; default 0.2)", false, 0.2, "F", cmd);
  TCLAP::ValueArg<int64_t> max_rollbacks("", "max-rollbacks", "faulty steps in a row (non-finite or a gradient spike, each rolled back at half the step sizes) before giving up (default 5)", false, 5, "K", cmd);
  TCLAP::ValueArg<double> max_spike("", "max-gradient-spike", "a weight gradient norm over this many times its running average is a fault, rolled back at half the step sizes (default 20; 0: off)", false, 20, "X", cmd);
  DeviceArg device(cmd);
  ThreadsArg threads(cmd);
  TCLAP::ValueArg<int64_t> batch("", "batch", "pairs per step over all ranks, the global batch, search and retraining (default: one per rank; resumed: the checkpoint's)", false, 1, "G", cmd);
  std::vector<std::string> validations = {"decoupled", "inline", "off"};
  TCLAP::ValuesConstraint<std::string> validation_allowed(validations);
  TCLAP::ValueArg<std::string> validation("", "validation", "decoupled (default: a separate process evaluates each checkpoint of the search, DIR/search.validation.jsonl, and of the retraining, DIR/retrain.validation.jsonl, and keeps the best, DIR/search.best.ckpt and DIR/retrain.best.autoreg), inline (every --validate-every steps; the search waits) or off", false, "decoupled", &validation_allowed, cmd);
  TCLAP::ValueArg<int> validation_threads("", "validation-threads", "threads of the decoupled validation process (default 1)", false, 1, "T", cmd);
  TCLAP::SwitchArg evaluate("", "evaluate", "evaluate this search's checkpoints as they are written instead of searching (the decoupled validation: the search starts one itself; run the search's command with --evaluate, e.g. on another machine sharing DIR): DIR/search.validation.jsonl, the best as DIR/search.best.ckpt", cmd, false);
  TCLAP::SwitchArg sync_checkpoints("", "sync-checkpoints", "write checkpoints in the search's thread (default: in the background)", cmd, false);
  ScaleOutArgs scale(cmd);
  TCLAP::ValueArg<uint64_t> seed("", "seed", "random seed (default 0)", false, 0, "S", cmd);
  TCLAP::SwitchArg resume("", "resume", "continue the search (or its retraining) in DIR from its checkpoint", cmd, false);
  cmd.setExceptionHandling(false);
  cmd.parse(argc, argv);

  SearchParams p;
  p.manifest = manifest.getValue();
  p.out = out.getValue();
  p.cache = cache.isSet() ? cache.getValue() : (fs::path(p.out) / "cache").string();
  p.op_cost = op_cost.getValue();
  if (fs::exists(p.out) && !fs::is_directory(p.out)) throw UsageError("--out " + p.out + " is a file, not a folder");
  if (budget.isSet() && steps.isSet()) throw UsageError("--budget-minutes and --steps exclude each other");
  if (budget.isSet() && !(budget.getValue() > 0)) throw UsageError("--budget-minutes must be > 0");
  if (steps.getValue() <= 0) throw UsageError("--steps must be positive");
  if (retrain_steps.getValue() < 0) throw UsageError("--retrain-steps must be >= 0");
  if (!(spacing.getValue() > 0)) throw UsageError("--spacing must be > 0");
  if (!(lr.getValue() > 0 && arch_lr.getValue() > 0 && objective_lr.getValue() > 0)) throw UsageError("learning rates must be > 0");
  if (max_forward.getValue() < 0 || latency_weight.getValue() < 0 || dice_weight.getValue() < 0) {
    throw UsageError("--max-forward-ms, --latency-weight and --dice-weight must be >= 0");
  }
  if (arch_every.getValue() <= 0 || objective_every.getValue() <= 0 || checkpoint_every.getValue() <= 0 ||
      validate_every.getValue() <= 0 || max_rollbacks.getValue() < 0) {
    throw UsageError("--arch-every, --objective-every, --checkpoint-every, --validate-every must be positive");
  }
  if (!(warmup.getValue() >= 0 && warmup.getValue() < 1)) throw UsageError("--warmup must be in [0, 1)");
  if (!(max_unreadable.getValue() >= 0 && max_unreadable.getValue() < 1)) throw UsageError("--max-unreadable must be in [0, 1)");
  p.info.network.kind = "autoreg";
  p.info.spacing = {spacing.getValue(), spacing.getValue(), spacing.getValue()};
  p.info.grid = grid.isSet() ? parse_grid(grid.getValue()) : std::array<int64_t, 3>{0, 0, 0};
  for (int64_t size : p.info.grid) {
    if (size % 4 != 0) throw UsageError("--grid: the AutoReg network needs sizes that are multiples of 4");
  }
  if (genotype.isSet()) p.info.network.genotype = read_genotype_option(genotype.getValue());
  auto& o = p.options;
  o.steps = steps.getValue();
  o.mode = mode.getValue();
  o.order = order.getValue();
  o.edges = edges.getValue();
  o.path = path.getValue();
  o.architecture_path = arch_path.getValue();
  o.budget_ms = max_forward.getValue();
  // The default budget is the default network's forward time; with no edge searched the
  // architecture is given, and so is its time.
  p.default_budget = !max_forward.isSet() && o.edges != "none";
  o.latency_weight = latency_weight.getValue();
  o.architecture_every = arch_every.getValue();
  if (!(update_crop.getValue() > 0 && update_crop.getValue() <= 1)) throw UsageError("--update-crop must be in (0, 1]");
  o.update_crop = update_crop.getValue();
  if (!(weight_crop.getValue() > 0 && weight_crop.getValue() <= 1)) throw UsageError("--weight-crop must be in (0, 1]");
  o.weight_crop = weight_crop.getValue();
  o.objective_every = objective_every.getValue();
  o.warmup_fraction = warmup.getValue();
  o.base_logit = base_logit.getValue();
  o.weight_lr = lr.getValue();
  if (max_gradient_norm.getValue() < 0) throw UsageError("--max-gradient-norm must be >= 0");
  o.max_gradient_norm = max_gradient_norm.getValue();
  o.architecture_lr = arch_lr.getValue();
  if (arch_decay.getValue() < 0) throw UsageError("--arch-weight-decay must be >= 0");
  o.architecture_weight_decay = arch_decay.getValue();
  o.objective_lr = objective_lr.getValue();
  o.objective_scale_fixed = objective_scale.getValue() == "fixed";
  if (max_spike.isSet() && max_spike.getValue() != 0 && !(max_spike.getValue() > 1)) {
    throw UsageError("--max-gradient-spike must be > 1 (or 0: off)");
  }
  o.spike_factor = max_spike.getValue();
  o.dice_weight = dice_weight.getValue();
  o.augment = !no_augment.getValue();
  o.max_rollbacks = max_rollbacks.getValue();
  o.seed = seed.getValue();
  o.device = device.value();
  try {
    if (initial.isSet()) o.initial_objective = registration::ObjectiveWeights::parse(initial.getValue());
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--initial-objective: ") + e.what());
  }
  if (terms.isSet()) {
    o.searched_terms.fill(false);
    std::stringstream list(terms.getValue());
    std::string name;
    while (std::getline(list, name, ',')) {
      if (name == "none") continue;
      bool known = false;
      for (int i = 0; i < registration::kObjectiveTerms; ++i) {
        if (name == registration::kObjectiveTermNames[i]) o.searched_terms[i] = known = true;
      }
      if (!known) throw UsageError("--terms: unknown term '" + name + "'");
    }
  }
  // A searched term needs a positive start: the defaults' where the user gave none.
  constexpr std::array<double, registration::kObjectiveTerms> kStart = {1.0, 0.5, 0.25, 0.5, 1.0};
  for (int i = 0; i < registration::kObjectiveTerms; ++i) {
    if (o.searched_terms[i] && !(o.initial_objective.lambda[i] > 0)) {
      if (initial.isSet()) {
        throw UsageError(std::string("--initial-objective: the searched term ") + registration::kObjectiveTermNames[i] +
                         " needs a positive starting weight");
      }
      o.initial_objective.lambda[i] = kStart[i];
    }
  }
  if (o.edges == "none" && std::find(o.searched_terms.begin(), o.searched_terms.end(), true) == o.searched_terms.end()) {
    throw UsageError("--edges none with --terms none: nothing to search (autoreg train trains a fixed network)");
  }
  if (o.device == "cuda" && !ops::cuda_available()) throw UsageError("--device cuda: " + ops::cuda_unavailable_reason());
  p.budget_minutes = budget.getValue();
  p.budget_given = budget.isSet();
  p.retrain_steps = retrain_steps.getValue();
  p.retrain_steps_given = retrain_steps.isSet();
  if (p.budget_given && p.retrain_steps_given) p.search_share = 1.0;  // the budget is the search's alone
  p.checkpoint_every = checkpoint_every.getValue();
  p.validate_every = validate_every.getValue();
  p.max_unreadable = max_unreadable.getValue();
  p.resume = resume.getValue();
  p.steps_given = steps.isSet();
  if (batch.isSet() && batch.getValue() < 1) throw UsageError("--batch must be at least 1");
  p.batch_set = batch.isSet();
  o.batch = batch.getValue();
  o.async_checkpoints = !sync_checkpoints.getValue();
  if (validation_threads.getValue() < 1) throw UsageError("--validation-threads must be at least 1");
  p.validation = validation.getValue();
  p.validation_threads = validation_threads.getValue();
  p.arguments = arguments_without(argc, argv, {"--nproc", "--max-restarts", "--threads", "--validation-threads"});
  if (evaluate.getValue()) {
    if (scale.nproc.isSet()) throw UsageError("--evaluate runs as one process: no --nproc");
    threads.apply();
    p.evaluate = true;
    parallel::attach_to_supervisor();  // started by the search: ends with it
    install_stop_handlers();
    parallel::release_stop_signals();  // held by the search until now (validation_process.cpp)
    return evaluate_search(p);
  }
  if (const auto code = supervise_if_asked(scale, argc, argv, "search", threads.value(),
                                           (fs::path(p.out) / "failures.jsonl").string())) {
    return *code;
  }
  threads.apply();
  const Distributed dist = join_if_distributed(scale, o.device);
  p.collective = dist.collective.get();
  p.lead = dist.lead();
  if (p.batch_set && o.batch < dist.world()) {
    throw UsageError("--batch " + std::to_string(o.batch) + ": at least one pair per rank (" +
                     std::to_string(dist.world()) + " ranks)");
  }
  if (dist.restarted() && fs::exists(fs::path(p.out) / "search.ckpt")) p.resume = true;
  p.options.inject_nan_at = parallel::injected_non_finite_step(dist.rank());  // tests (parallel/worker.h)
  install_stop_handlers();
  try {
    return search_main(p);
  } catch (const Interrupted&) {
    throw;
  } catch (const std::exception& e) {
    diagnose_own_failure(dist, e, exit_code(e), (fs::path(p.out) / "failures.jsonl").string());
    throw;
  }
}

}  // namespace autoreg::apps
