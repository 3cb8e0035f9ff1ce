// The search job's parts (search_job.h): its parameters as the stages use them, and the
// stages search_job.cpp runs (load the data, the operation costs, the search loop, the
// exported genotype, the retraining).
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "autoreg/registration/collective.h"
#include "autoreg/registration/model_file.h"
#include "autoreg/registration/train.h"
#include "autoreg/search/op_cost.h"
#include "autoreg/search/searcher.h"
#include "autoreg/pipeline/training_loop.h"

namespace autoreg::pipeline::detail {

struct SearchParams {
  std::string manifest, out, cache, op_cost;
  registration::ModelInfo info;
  search::SearchOptions options;
  double budget_minutes = 0;     // > 0: search and retraining share this time
  double search_share = 0.5;     // of the budget, for the search
  int64_t retrain_steps = 1000;  // with a budget and not given: the rest of the budget
  bool retrain_steps_given = false, budget_given = false, steps_given = false;
  bool default_budget = true;    // --max-forward-ms not given: the default genotype's time
  int64_t checkpoint_every = 25, validate_every = 50;
  double max_unreadable = 0.2;
  bool resume = false;
  bool batch_set = false;        // --batch given (else: one pair per rank, or the checkpoint's)
  Validation validation = Validation::Decoupled;  // the search's and the retraining's
  int validation_threads = 1;
  // Data-parallel (scale_out.h): the ranks' sums; rank 0 (lead) alone preprocesses,
  // measures, logs and writes.
  registration::Collective* collective = nullptr;
  bool lead = true;
  // The decoupled evaluation's command line (the search's settings with evaluate, no
  // --nproc, no --threads: the watcher gets validation_threads) and the autoreg command.
  std::vector<std::string> evaluation_command;
  std::string executable;
  bool evaluate = false;         // --evaluate: this process evaluates the search's checkpoints
  std::string evaluations;       // the decoupled evaluation's results file, read by the search loop ("": none)
};

// The files of DIR.
struct Paths {
  std::filesystem::path dir;
  std::string file(const char* name) const { return (dir / name).string(); }
};

// Preprocessed by rank 0; the other ranks wait, then read its cache.
registration::TrainingSet load_data(SearchParams& p);
// --batch not given: one pair per rank, or (resumed) the checkpoint's global batch.
void default_batch(SearchParams& p, const std::string& checkpoint, int world);
// The forward-time budget (the default network's predicted time unless --max-forward-ms)
// into p.options, checked; returns the default network's predicted time.
double apply_budget(SearchParams& p, const search::OpCosts& costs);
// Measured by rank 0 (or read); the other ranks wait, then read DIR/op_cost.json. Call
// after load_data (the ranks' second meeting).
search::OpCosts operation_costs(const SearchParams& p, const Paths& out);
// Steps the search until its steps or its share of the budget are done, logging each
// step, validating, checkpointing; a stop request writes a checkpoint and throws
// Interrupted. `earlier`: the search seconds of earlier runs.
void search_loop(search::Searcher& searcher, const SearchParams& p, const Paths& out, double earlier);
// genotype.txt, genotype.json and report.html of a finished search; returns the summary.
nlohmann::json export_search(search::Searcher& searcher, const SearchParams& p, const Paths& out, double default_ms);
// The derived network trained from scratch with the searched λ: DIR/model.autoreg.
void retrain(const SearchParams& p, const Paths& out, const registration::TrainingSet& data, nlohmann::json summary);

}  // namespace autoreg::pipeline::detail
