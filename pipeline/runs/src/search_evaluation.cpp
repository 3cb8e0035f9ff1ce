#include "search_evaluation.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "autoreg/parallel/evaluation.h"
#include "autoreg/base/errors.h"
#include "autoreg/runs/run_loop.h"

namespace autoreg::pipeline::detail {

namespace fs = std::filesystem;

void evaluate_search(SearchParams p) {
  const Paths out{fs::path(p.settings.out)};
  const std::string checkpoint = out.file("search.ckpt");
  std::fprintf(stderr, "evaluate: watching %s\n", checkpoint.c_str());
  // The data and the costs wait for the first checkpoint: by then rank 0 has written the
  // cache and op_cost.json.
  while (!fs::exists(checkpoint)) {
    if (pipeline::stop_requested()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  p.lead = true;
  p.collective = nullptr;
  default_batch(p, checkpoint, 1);
  const registration::TrainingSet data = load_data(p);
  const search::OpCosts costs = operation_costs(p, out);
  apply_budget(p, costs);
  search::Searcher searcher(data, p.info, p.options, costs);
  parallel::WatchOptions o;
  o.checkpoint = checkpoint;
  o.kind = "SEARCH";
  o.step_field = "search.step";
  o.results = out.file("search.validation.jsonl");
  o.best = out.file("search.best.ckpt");
  o.finished = out.file("genotype.json");
  o.stop = stop_requested;
  o.progress = [](const std::string& line) { std::fprintf(stderr, "evaluate: %s\n", line.c_str()); };
  parallel::watch_checkpoints(o, [&](const registration::Archive& a, const std::string& path) {
    searcher.restore(a, path);
    const registration::ValidationScores s = searcher.validation_scores();
    return parallel::Evaluation{s.dice, s.folding_percent, s.pairs};
  });
  return;
}

std::unique_ptr<ValidationProcess> start_search_evaluation(const SearchParams& p, const Paths& out, bool fresh) {
  ValidationRun v;
  v.out = out.file("search");  // search.ckpt, search.validation.jsonl, search.best.ckpt
  v.threads = p.settings.validation_threads;
  v.device = p.options.device;
  v.fresh = fresh;
  SearchSettings watcher = p.settings;  // this search's settings, evaluating
  watcher.evaluate = true;
  watcher.threads = 0;                  // its own: ValidationRun::threads
  watcher.scale.nproc = watcher.scale.max_restarts = 0;
  v.command = to_arguments(watcher);
  v.executable = p.settings.executable;
  return std::make_unique<ValidationProcess>(v);
}

void finish_search_evaluation(ValidationProcess& watcher, search::Searcher& searcher, const Paths& out) {
  const parallel::EvaluatedStep* best = nullptr;
  const auto evaluated = watcher.finish();
  for (const auto& e : evaluated) {
    if (e.best) best = &e;
    if (e.step == searcher.steps_done()) searcher.notes["validation_dice"] = std::to_string(e.dice);
  }
  if (best) {
    std::fprintf(stderr, "search: best validation Dice %.4f at step %ld: %s\n", best->dice, long(best->step),
                 out.file("search.best.ckpt").c_str());
  }
}

}  // namespace autoreg::pipeline::detail
