// `autoreg search`'s parts: its parameters and the stages search_main runs (load the
// data, the operation costs, the search loop, the exported genotype, the retraining).
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

#include "autoreg/registration/model_file.h"
#include "autoreg/registration/train.h"
#include "autoreg/search/op_cost.h"
#include "autoreg/search/searcher.h"

namespace autoreg::apps {

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
};

// The files of DIR.
struct Paths {
  std::filesystem::path dir;
  std::string file(const char* name) const { return (dir / name).string(); }
};

registration::TrainingSet load_data(SearchParams& p);
search::OpCosts operation_costs(const SearchParams& p, const Paths& out);
// Steps the search until its steps or its share of the budget are done, logging each
// step, validating, checkpointing; a stop request writes a checkpoint and throws
// Interrupted. `earlier`: the search seconds of earlier runs.
void search_loop(search::Searcher& searcher, const SearchParams& p, const Paths& out, double earlier);
// genotype.txt, genotype.json and report.html of a finished search; returns the summary.
nlohmann::json export_search(search::Searcher& searcher, const SearchParams& p, const Paths& out, double default_ms);
// The derived network trained from scratch with the searched λ: DIR/model.autoreg.
void retrain(const SearchParams& p, const Paths& out, const registration::TrainingSet& data, nlohmann::json summary);

}  // namespace autoreg::apps
