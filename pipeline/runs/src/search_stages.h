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
#include "autoreg/runs/search_settings.h"
#include "autoreg/runs/run_loop.h"
#include "autoreg/search/searcher.h"

namespace autoreg::pipeline::detail {

// The settings as given, and what the stages make of them.
struct SearchParams {
  SearchSettings settings;
  std::string cache;             // settings.cache, or DIR/cache
  registration::ModelInfo info;
  search::SearchOptions options;
  bool resume = false;           // settings.resume, or a restarted rank with a checkpoint to resume
  // Data-parallel (parallel/ranks.h): the ranks' sums; rank 0 (lead) alone preprocesses,
  // measures, logs and writes.
  registration::Collective* collective = nullptr;
  bool lead = true;
  std::string evaluations;       // the decoupled evaluation's results file, read by the search loop ("": none)

  // --max-forward-ms not given: the default genotype's time (with no edge searched the
  // architecture is given, and so is its time).
  bool default_budget() const { return !settings.max_forward_ms && settings.search.edges != search::EdgeSet::None; }
  // The search's share of a time budget: all of it when the retraining has its steps.
  double search_share() const { return settings.retrain_steps ? 1.0 : 0.5; }
  double budget_minutes() const { return settings.budget_minutes.value_or(0); }
  int64_t retrain_steps() const { return settings.retrain_steps.value_or(SearchSettings::kRetrainSteps); }
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
