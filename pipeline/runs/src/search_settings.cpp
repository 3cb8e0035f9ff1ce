// The rows of `autoreg search`'s settings (search_settings.h): its options, the command
// line its ranks and watcher run, and what Python and the docs list.
#include "autoreg/runs/search_settings.h"

#include <limits>
#include <string>

#include "autoreg/base/schema.h"
#include "autoreg/pair/option_values.h"
#include "autoreg/search/choices.h"

namespace autoreg::pipeline {
namespace {

using S = SearchSettings;
using O = search::SearchOptions;

// The rows of the search's own options (search::SearchOptions), as `search` spells them.
base::Schema<O> search_option_rows() {
  return {
      base::choice_field<O>("mode", "mode", "joint: ω, α and λ in one loop; sequential: α, then λ on the derived architecture",
                            search::kModeNames, &O::mode),
      base::choice_field<O>("order", "order", "α's gradient: first or second order (finite-difference Hessian-vector product)",
                            search::kOrderNames, &O::order),
      base::choice_field<O>("edges", "edges",
                            "searched edges: all (12), deformation (the 6 D-cell edges) or none (only λ, on --genotype)",
                            search::kEdgeSetNames, &O::edges),
      base::choice_field<O>("path", "path",
                            "the weights' path: mixed (DARTS: every allowed candidate, ~7x a network's step) or sampled "
                            "(GDAS: one candidate per edge and step; did not train on OASIS-TRT, see docs/search.md)",
                            search::kPathNames, &O::path),
      base::with_aliases(base::choice_field<O>("architecture_path", "architecture-path",
                                               "α's gradient: mixed (DARTS: every allowed candidate) or sampled (GDAS "
                                               "straight-through on the step's path)",
                                               search::kPathNames, &O::architecture_path),
                         {"arch-path"}),
      base::number_field<O>("latency_weight", "latency-weight", "W",
                            "weight of the expected forward time (÷ the default network's) in α's objective, always on "
                            "(0: only the budget counts)",
                            &O::latency_weight),
      base::number_field<O>("update_crop", "update-crop", "F",
                            "α and λ updates see a random box of the pairs, this share of each axis (1: whole volumes)",
                            &O::update_crop),
      base::number_field<O>("weight_crop", "weight-crop", "F",
                            "after the warm-up the weights' steps on the supernet see a random box of the training pair, "
                            "this share of each axis (0.6: a fifth of the mixed network's cost; 1: whole volumes)",
                            &O::weight_crop),
      base::with_aliases(base::whole_field<O>("architecture_every", "architecture-every", "K", "update α every k-th step",
                                              &O::architecture_every, 1),
                         {"arch-every"}),
      base::whole_field<O>("objective_every", "objective-every", "K", "update λ every k-th step", &O::objective_every, 1),
      base::with_aliases(base::number_field<O>("warmup_fraction", "warmup-fraction", "F",
                                               "share of the search in which only the weights move", &O::warmup_fraction),
                         {"warmup"}),
      base::number_field<O>("base_logit", "base-logit", "L",
                            "starting α logit of the default genotype's operation on every searched edge (3: a "
                            "probability of 0.74 against 0.04 for each other candidate; 0: all equally likely)",
                            &O::base_logit),
      base::with_aliases(base::number_field<O>("learning_rate", "learning-rate", "R",
                                               "Adam learning rate of the weights, search and retraining", &O::weight_lr),
                         {"lr"}),
      base::number_field<O>("max_gradient_norm", "max-gradient-norm", "N",
                            "clip the weights' gradient to this norm (5, as DARTS; 0: no clipping)", &O::max_gradient_norm),
      base::with_aliases(base::number_field<O>("architecture_lr", "architecture-lr", "R", "Adam learning rate of α",
                                               &O::architecture_lr),
                         {"arch-lr"}),
      base::with_aliases(base::number_field<O>("architecture_weight_decay", "architecture-weight-decay", "D",
                                               "Adam weight decay of α (1e-3, DARTS's; it also pulls α from --base-logit "
                                               "back towards uniform)",
                                               &O::architecture_weight_decay),
                         {"arch-weight-decay"}),
      base::number_field<O>("objective_lr", "objective-lr", "R", "Adam learning rate of log λ", &O::objective_lr),
      {"objective_scale", "objective-scale", "fixed|free",
       "fixed: λ's updates change the mix of the searched terms, not their overall weight against soft Dice (one "
       "unrolled step is biased towards shrinking them all); free",
       [](const O& o) { return std::string(o.objective_scale_fixed ? "fixed" : "free"); },
       [](O& o, const std::string& t) {
         if (t != "fixed" && t != "free") throw base::UsageError("--objective-scale must be 'fixed' or 'free', got '" + t + "'");
         o.objective_scale_fixed = t == "fixed";
       }},
      base::number_field<O>("dice_weight", "dice-weight", "W", "weight of soft Dice on training label maps (0 = unsupervised)",
                            &O::dice_weight),
      base::off_switch_field<O>("augment", "no-augment", "no random deformations and intensity changes", &O::augment),
      base::whole_field<O>("max_rollbacks", "max-rollbacks", "K",
                           "faulty steps in a row (non-finite or a gradient spike, each rolled back at half the step "
                           "sizes) before giving up",
                           &O::max_rollbacks, 0),
      base::number_field<O>("max_gradient_spike", "max-gradient-spike", "X",
                            "a weight gradient norm over this many times its running average is a fault, rolled back at "
                            "half the step sizes (0: off)",
                            &O::spike_factor),
      base::device_field<O>("where to search", &O::device),
      base::off_switch_field<O>("async_checkpoints", "sync-checkpoints", "write checkpoints in the search's thread, not in the background",
                                &O::async_checkpoints),
      base::whole_field<O>("seed", "seed", "S", "random seed", &O::seed, 0, std::numeric_limits<int64_t>::max())};
}

}  // namespace

const base::Schema<SearchSettings>& search_schema() {
  static const base::Schema<S> schema = [] {
    const base::Schema<O> own = search_option_rows();
    auto option = [&own](const std::string& keyword) {
      const base::SettingField<O>* row = base::find_row(own, keyword);
      if (!row) throw std::logic_error("search_schema: no row " + keyword);
      return base::nested_row(*row, &S::search);
    };
    base::Schema<S> rows{
        base::text_field<S>("manifest", "manifest", "FILE", "CSV manifest of the dataset (needs labelled val rows)",
                            &S::manifest, true),
        base::text_field<S>("out", "out", "DIR",
                            "output folder (created): genotype.txt, genotype.json, model.autoreg, report.html, logs, "
                            "checkpoints",
                            &S::out, true),
        base::optional_field<S>("budget_minutes", "budget-minutes", "T",
                                "instead of --steps: wall-clock minutes for search and retraining together (half each "
                                "unless --retrain-steps)",
                                &S::budget_minutes),
        base::optional_field<S>("steps", "steps", "N", "search steps (default 500)", &S::steps, 1),
        base::optional_field<S>("retrain_steps", "retrain-steps", "N",
                                "retraining steps of the derived network (default 1000, or the rest of --budget-minutes; "
                                "0: no retraining, no model)",
                                &S::retrain_steps, 0),
        {"grid", "grid", "DxHxW", "model grid DxHxW at --spacing (default: the reference's foreground box + 8 mm)",
         [](const S& s) { return grid_text(s.grid); }, [](S& s, const std::string& t) { s.grid = parse_grid(t); }},
        base::number_field<S>("spacing", "spacing", "MM", "model grid spacing in mm", &S::spacing),
        option("mode"), option("order"), option("edges"),
        base::text_field<S>("genotype", "genotype", "FILE",
                            "the base genotype: the operations of edges that are not searched, and α's starting point "
                            "with --base-logit (default: the default network's)",
                            &S::genotype),
        option("path"), option("architecture_path"),
        base::optional_field<S>("max_forward_ms", "max-forward-ms", "X",
                                "forward-time budget of the derived network at the model grid on this machine (default: "
                                "the default network's; 0: none)",
                                &S::max_forward_ms)};
    for (const char* k : {"latency_weight", "update_crop", "weight_crop", "architecture_every", "objective_every",
                          "warmup_fraction", "base_logit", "learning_rate", "max_gradient_norm", "architecture_lr",
                          "architecture_weight_decay", "objective_lr", "objective_scale", "dice_weight"}) {
      rows.push_back(option(k));
    }
    base::Schema<S> rest{
        base::text_field<S>("terms", "terms", "LIST",
                            "the objective terms whose weights are searched (default ncc9,ncc7_half,ncc5_quarter,"
                            "smoothness; add mind for multimodal data, with a positive starting weight in "
                            "--initial-objective; none: λ stays at --initial-objective)",
                            &S::terms),
        base::text_field<S>("initial_objective", "initial-objective", "WEIGHTS",
                            "starting λ (default ncc9=1,ncc7_half=0.5,ncc5_quarter=0.25,smoothness=1)", &S::initial_objective),
        base::text_field<S>("op_cost", "op-cost", "FILE",
                            "operation costs measured before (JSON, from an earlier search's op_cost.json at the same grid)",
                            &S::op_cost),
        base::text_field<S>("cache", "cache", "DIR", "folder for preprocessed volumes (default DIR/cache)", &S::cache),
        option("augment"),
        base::whole_field<S>("checkpoint_every", "checkpoint-every", "N", "search steps between checkpoints (retraining: 4×)",
                             &S::checkpoint_every, 1),
        base::whole_field<S>("validate_every", "validate-every", "N", "with --validation inline: steps between validations",
                             &S::validate_every, 1),
        base::number_field<S>("max_unreadable", "max-unreadable", "F",
                              "share of manifest rows that may be unreadable (reported and skipped)", &S::max_unreadable),
        option("max_rollbacks"), option("max_gradient_spike"), option("device"),
        threads_field<S>("CPU threads (default: all)", &S::threads),
        base::optional_field<S>("batch", "batch", "G",
                                "pairs per step over all ranks, the global batch, search and retraining (default: one per "
                                "rank; resumed: the checkpoint's)",
                                &S::batch, 1),
        base::choice_field<S>("validation", "validation",
                              "decoupled: a separate process evaluates each checkpoint of the search, "
                              "DIR/search.validation.jsonl, and of the retraining, DIR/retrain.validation.jsonl, and keeps "
                              "the best, DIR/search.best.ckpt and DIR/retrain.best.autoreg; inline: every --validate-every "
                              "steps (the search waits); off",
                              kValidationNames, &S::validation),
        base::whole_field<S>("validation_threads", "validation-threads", "T", "threads of the decoupled validation process",
                             &S::validation_threads, 1),
        base::switch_field<S>("evaluate", "evaluate",
                              "evaluate this search's checkpoints as they are written instead of searching (the decoupled "
                              "validation: the search starts one itself; run the search's command with --evaluate, e.g. on "
                              "another machine sharing DIR): DIR/search.validation.jsonl, the best as DIR/search.best.ckpt",
                              &S::evaluate),
        option("async_checkpoints")};
    for (auto& row : rest) rows.push_back(std::move(row));
    for (auto& row : base::nested(scale_out_schema(), &S::scale)) rows.push_back(std::move(row));
    rows.push_back(option("seed"));
    rows.push_back(base::switch_field<S>("resume", "resume", "continue the search (or its retraining) in DIR from its checkpoint",
                                         &S::resume));
    return rows;
  }();
  return schema;
}

std::vector<std::string> to_arguments(const SearchSettings& s) { return base::arguments("search", search_schema(), s); }

}  // namespace autoreg::pipeline
