// The settings of `autoreg search` (search_job.h runs them): one struct with its defaults,
// validated in one place, written back as the command line that parses into it. Apart
// from the job so that the search's stages (search_stages.h) include the settings, not
// the job that calls them.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "autoreg/base/schema.h"
#include "autoreg/parallel/scale_out.h"
#include "autoreg/runs/run_settings.h"
#include "autoreg/search/search_options.h"

namespace autoreg::pipeline {

struct SearchSettings {
  static constexpr int64_t kSteps = 500, kRetrainSteps = 1000;  // when neither they nor a budget is given
  std::string manifest;                    // CSV: image,labels,split (needs labelled val rows)
  std::string out;                         // the output folder (created)
  std::optional<double> budget_minutes;    // instead of steps: search and retraining together
  std::optional<int64_t> steps;            // search steps; none: 500
  std::optional<int64_t> retrain_steps;    // none: 1000, or the rest of the budget; 0: no model
  std::array<int64_t, 3> grid{0, 0, 0};    // 0s: the reference's foreground box + 8 mm
  double spacing = 2;                      // mm
  // The search's own options (search/search_options.h: the mode, α's gradient and paths,
  // the searched edges, crops, update intervals, warm-up, learning rates, clipping, faults,
  // augmentation, seed, device, background checkpoints), set as they are searched with.
  // The job sets their steps, budget_ms, batch, searched_terms and initial_objective from
  // the settings below (SearchParams::options).
  search::SearchOptions search;
  std::string genotype;                    // the base genotype's file; "": the default network's
  std::optional<double> max_forward_ms;    // none: the default network's forward time; 0: no budget
  std::string terms;                       // the searched terms, comma-separated; "": the default four; "none"
  std::string initial_objective;           // starting λ; "": the defaults
  std::string op_cost;                     // operation costs measured before; "": measured (or DIR's)
  std::string cache;                       // "": <out>/cache
  int64_t checkpoint_every = 25, validate_every = 50;
  double max_unreadable = 0.2;
  int threads = 0;                         // 0: LibTorch's default
  std::optional<int64_t> batch;            // global batch; none: one pair per rank (resumed: the checkpoint's)
  Validation validation = Validation::Decoupled;
  int validation_threads = 1;
  bool evaluate = false;                   // this process is the decoupled evaluation (evaluate_search)
  parallel::ScaleOut scale;
  bool resume = false;
  std::string executable;                  // the autoreg command for the watcher and ranks; "": executable.h
};

// A base::UsageError naming the option when the settings cannot search.
void validate(const SearchSettings& s);

// The rows of the settings (base/schema.h): `search`'s options, the command line its
// ranks and watcher run, and docs/options.md's table are made from them.
const base::Schema<SearchSettings>& search_schema();

// `search` and the options that parse back into `s` (without --nproc and --max-restarts):
// base::arguments over search_schema().
std::vector<std::string> to_arguments(const SearchSettings& s);

}  // namespace autoreg::pipeline
