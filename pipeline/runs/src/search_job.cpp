#include "autoreg/runs/search_job.h"

#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>

#include "long_run.h"
#include "autoreg/base/errors.h"
#include "autoreg/io/volume.h"
#include "autoreg/ops.h"
#include "autoreg/parallel/process.h"
#include "autoreg/parallel/worker.h"
#include "autoreg/runs/exit_codes.h"
#include "autoreg/runs/run_log.h"
#include "autoreg/registration/model_file.h"
#include "search_evaluation.h"
#include "search_stages.h"

namespace autoreg::pipeline {
namespace {

namespace fs = std::filesystem;
using base::UsageError;
using detail::Paths;
using detail::SearchParams;

std::string failures_file(const SearchSettings& s) { return (fs::path(s.out) / "failures.jsonl").string(); }

// The searched terms and their starting weights (a searched term needs a positive start:
// the defaults' where none is given).
void objective_terms(const SearchSettings& s, search::SearchOptions& o) {
  try {
    if (!s.initial_objective.empty()) o.initial_objective = registration::ObjectiveWeights::parse(s.initial_objective);
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--initial-objective: ") + e.what());
  }
  if (!s.terms.empty()) {
    o.searched_terms.fill(false);
    std::stringstream list(s.terms);
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
  constexpr std::array<double, registration::kObjectiveTerms> kStart = {1.0, 0.5, 0.25, 0.5, 1.0};
  for (int i = 0; i < registration::kObjectiveTerms; ++i) {
    if (o.searched_terms[i] && !(o.initial_objective.lambda[i] > 0)) {
      if (!s.initial_objective.empty()) {
        throw UsageError(std::string("--initial-objective: the searched term ") + registration::kObjectiveTermNames[i] +
                         " needs a positive starting weight");
      }
      o.initial_objective.lambda[i] = kStart[i];
    }
  }
  if (s.search.edges == search::EdgeSet::None && std::find(o.searched_terms.begin(), o.searched_terms.end(), true) == o.searched_terms.end()) {
    throw UsageError("--edges none with --terms none: nothing to search (autoreg train trains a fixed network)");
  }
}

// The search's options as given, with what the job decides: the steps (or the default),
// the forward-time budget, the batch and the objective's terms.
search::SearchOptions search_options(const SearchSettings& s) {
  search::SearchOptions o = s.search;
  o.steps = s.steps.value_or(SearchSettings::kSteps);
  o.budget_ms = s.max_forward_ms.value_or(0);
  o.batch = s.batch.value_or(1);
  objective_terms(s, o);
  return o;
}

// The stages' parameters (search_stages.h).
SearchParams search_params(const SearchSettings& s) {
  SearchParams p;
  p.settings = s;
  p.cache = s.cache.empty() ? (fs::path(s.out) / "cache").string() : s.cache;
  p.info.network.kind = "autoreg";
  p.info.spacing = {s.spacing, s.spacing, s.spacing};
  p.info.grid = s.grid;
  if (!s.genotype.empty()) p.info.network.genotype = detail::read_genotype_file(s.genotype);
  p.options = search_options(s);
  p.resume = s.resume;
  return p;
}

void search_stages(SearchParams p) {
  const bool lead = p.lead;
  const bool made_out = !fs::exists(p.settings.out);
  fs::create_directories(p.settings.out);
  const Paths out{fs::path(p.settings.out)};
  const std::string checkpoint = out.file("search.ckpt");
  if (p.resume && !fs::exists(checkpoint)) throw UsageError("--resume: no checkpoint " + checkpoint + " to resume from");
  if (!p.resume && (fs::exists(checkpoint) || fs::exists(out.file("retrain.ckpt")))) {
    throw UsageError(p.settings.out + " holds a search already: --resume continues it, or choose another --out");
  }
  const std::string& op_cost = p.settings.op_cost;
  if (!op_cost.empty() && !fs::exists(op_cost)) throw io::IoError(op_cost + ": no such operation-cost file");
  const int world = p.collective ? p.collective->world() : 1;
  detail::default_batch(p, checkpoint, world);
  if (p.options.batch < world) {
    throw UsageError("--batch " + std::to_string(p.options.batch) + ": at least one pair per rank (" +
                     std::to_string(world) + " ranks)");
  }
  registration::TrainingSet data;
  try {
    data = detail::load_data(p);
  } catch (const io::IoError&) {
    std::error_code ec;
    if (made_out && lead) fs::remove_all(p.settings.out, ec);  // bad input: leave nothing behind
    throw;
  }
  const search::OpCosts costs = detail::operation_costs(p, out);
  const double default_ms = detail::apply_budget(p, costs);

  nlohmann::json summary;
  {
    std::unique_ptr<search::Searcher> made;
    try {
      made = std::make_unique<search::Searcher>(data, p.info, p.options, costs);
    } catch (const std::invalid_argument& e) {
      throw io::IoError(p.settings.manifest + ": " + e.what());
    }
    search::Searcher& searcher = *made;
    if (p.collective) {
      searcher.distribute(*p.collective);
      if (lead) std::fprintf(stderr, "data-parallel: %d ranks, %ld pairs per step (global batch)\n", world, long(p.options.batch));
    }
    double earlier = 0;  // search seconds before this run
    if (p.resume) {
      searcher.resume(checkpoint);
      if (p.settings.steps.has_value()) searcher.set_total_steps(p.options.steps);
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
      if (lead && p.settings.validation == Validation::Decoupled && searcher.validation_pair_count() > 0) {
        watcher = detail::start_search_evaluation(p, out, !p.resume);
        p.evaluations = watcher->results();
      }
      detail::search_loop(searcher, p, out, earlier);
      if (watcher) {
        detail::finish_search_evaluation(*watcher, searcher, out);
        // The last evaluation's Dice kept with the checkpoint (a resumed finished search
        // exports it again).
        searcher.save_checkpoint(checkpoint);
        searcher.finish_checkpoints();
      }
    }
    summary = detail::export_search(searcher, p, out, default_ms);
  }  // the supernet's memory goes before retraining
  if (p.settings.retrain_steps == 0) {
    if (lead) std::fprintf(stderr, "--retrain-steps 0: no model written\n");
    return;
  }
  // Rank 0's last evaluation and its forward-time measurement may outlast a collective's
  // timeout: the others wait at the barrier (2 hours), not in the retraining's broadcast.
  if (p.collective) p.collective->barrier();
  detail::retrain(p, out, data, summary);
}

}  // namespace

void validate(const SearchSettings& s) {
  if (fs::exists(s.out) && !fs::is_directory(s.out)) throw UsageError("--out " + s.out + " is a file, not a folder");
  if (s.budget_minutes && s.steps) throw UsageError("--budget-minutes and --steps exclude each other");
  if (s.budget_minutes && !(*s.budget_minutes > 0)) throw UsageError("--budget-minutes must be > 0");
  if (s.steps.value_or(1) <= 0) throw UsageError("--steps must be positive");
  if (s.retrain_steps.value_or(0) < 0) throw UsageError("--retrain-steps must be >= 0");
  if (!(s.spacing > 0)) throw UsageError("--spacing must be > 0");
  if (!(s.search.weight_lr > 0 && s.search.architecture_lr > 0 && s.search.objective_lr > 0)) throw UsageError("learning rates must be > 0");
  if (s.max_forward_ms.value_or(0) < 0 || s.search.latency_weight < 0 || s.search.dice_weight < 0) {
    throw UsageError("--max-forward-ms, --latency-weight and --dice-weight must be >= 0");
  }
  if (s.search.architecture_every <= 0 || s.search.objective_every <= 0 || s.checkpoint_every <= 0 || s.validate_every <= 0 ||
      s.search.max_rollbacks < 0) {
    throw UsageError("--architecture-every, --objective-every, --checkpoint-every, --validate-every must be positive");
  }
  if (!(s.search.warmup_fraction >= 0 && s.search.warmup_fraction < 1)) throw UsageError("--warmup-fraction must be in [0, 1)");
  if (!(s.max_unreadable >= 0 && s.max_unreadable < 1)) throw UsageError("--max-unreadable must be in [0, 1)");
  for (int64_t size : s.grid) {
    if (size % 4 != 0) throw UsageError("--grid: the AutoReg network needs sizes that are multiples of 4");
  }
  if (!(s.search.update_crop > 0 && s.search.update_crop <= 1)) throw UsageError("--update-crop must be in (0, 1]");
  if (!(s.search.weight_crop > 0 && s.search.weight_crop <= 1)) throw UsageError("--weight-crop must be in (0, 1]");
  if (s.search.max_gradient_norm < 0) throw UsageError("--max-gradient-norm must be >= 0");
  if (s.search.architecture_weight_decay < 0) throw UsageError("--architecture-weight-decay must be >= 0");
  if (s.search.spike_factor != 0 && !(s.search.spike_factor > 1)) throw UsageError("--max-gradient-spike must be > 1 (or 0: off)");
  if (s.search.path == search::Path::Mixed && s.search.architecture_path == search::Path::Sampled) {
    throw UsageError("--architecture-path sampled needs --path sampled (a mixed path has no sample to take the gradient on)");
  }
  search::SearchOptions terms;
  objective_terms(s, terms);
  if (s.search.device == "cuda" && !ops::cuda_available()) throw UsageError("--device cuda: " + ops::cuda_unavailable_reason());
  if (s.batch && *s.batch < 1) throw UsageError("--batch must be at least 1");
  if (s.validation_threads < 1) throw UsageError("--validation-threads must be at least 1");
  if (s.evaluate && s.scale.nproc > 0) throw UsageError("--evaluate runs as one process: no --nproc");
  parallel::validate(s.scale);
}

void search(const SearchSettings& s) {
  validate(s);
  if (s.evaluate) throw UsageError("evaluate: the decoupled evaluation is evaluate_search, not search");
  if (s.scale.nproc > 0) {
    detail::supervise_job(to_arguments(s), s.executable, s.scale, s.threads, failures_file(s));
    return;
  }
  SearchParams p = search_params(s);
  const parallel::Distributed dist = parallel::join_if_distributed(s.scale, s.search.device);
  p.collective = dist.collective.get();
  p.lead = dist.lead();
  if (p.settings.batch.has_value() && p.options.batch < dist.world()) {
    throw UsageError("--batch " + std::to_string(p.options.batch) + ": at least one pair per rank (" +
                     std::to_string(dist.world()) + " ranks)");
  }
  if (dist.restarted() && fs::exists(fs::path(p.settings.out) / "search.ckpt")) p.resume = true;
  p.options.inject_nan_at = parallel::injected_non_finite_step(dist.rank());  // tests (parallel/worker.h)
  try {
    search_stages(p);
  } catch (const base::Interrupted&) {
    throw;
  } catch (const std::exception& e) {
    parallel::diagnose_own_failure(dist, e, exit_code(e), failures_file(s));
    throw;
  }
}

void evaluate_search(const SearchSettings& s) {
  validate(s);
  parallel::attach_to_supervisor();  // started by the search: ends with it
  parallel::release_stop_signals();  // held by the search until now (validation_process.cpp)
  detail::evaluate_search(search_params(s));
}

}  // namespace autoreg::pipeline
