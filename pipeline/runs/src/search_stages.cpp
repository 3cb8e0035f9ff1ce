#include "search_stages.h"

#include <ATen/Parallel.h>

#include <cmath>
#include <cstdio>
#include <ctime>
#include <sstream>

#include "autoreg/base/atomic_file.h"
#include "autoreg/io/manifest.h"
#include "autoreg/io/volume.h"
#include "autoreg/parallel/failure.h"
#include "autoreg/runs/dataset.h"
#include "autoreg/qc/search_report.h"
#include "autoreg/base/errors.h"
#include "autoreg/runs/run_log.h"
#include "autoreg/parallel/ranks.h"
#include "search_outputs.h"
#include "autoreg/runs/run_loop.h"
#include "validation_process.h"

namespace autoreg::pipeline::detail {

namespace fs = std::filesystem;

registration::TrainingSet load_data(SearchParams& p) {
  const io::Manifest manifest = io::read_manifest(p.settings.manifest);
  if (manifest.split("val").empty()) {
    throw io::IoError(p.settings.manifest + ": no 'val' rows: the search chooses the architecture and the objective on "
                      "labelled validation subjects (λ raises the Dice of their warped label maps)");
  }
  pipeline::DatasetOptions dataset;
  dataset.cache_dir = p.cache;
  dataset.max_unreadable_fraction = p.settings.max_unreadable;
  const std::string failures = (fs::path(p.settings.out) / "failures.jsonl").string();
  const bool lead = p.lead;
  dataset.progress = [lead](const std::string& line) {
    if (lead) std::fprintf(stderr, "preprocess: %s\n", line.c_str());
  };
  dataset.skipped = [&](const std::string& what) {
    if (lead && !p.settings.evaluate) parallel::append_failure(failures, parallel::skipped_row(what));
  };
  registration::TrainingSet data;
  // Rank 0 preprocesses into the cache; the others then read it.
  parallel::lead_first(p.collective, lead, [&] {
    try {
      data = pipeline::load_training_set(manifest, p.info, 4, dataset);
    } catch (const std::invalid_argument& e) {
      throw io::IoError(e.what());
    }
  });
  if (lead) std::fprintf(stderr, "search set: %zu training, %zu validation subjects%s; model grid %ldx%ldx%ld at %g mm\n",
               data.train.size(), data.validation.size(), data.atlas ? ", atlas mode" : ", pairwise mode",
               long(p.info.grid[0]), long(p.info.grid[1]), long(p.info.grid[2]), p.info.spacing[0]);
  return data;
}

void default_batch(SearchParams& p, const std::string& checkpoint, int world) {
  if (p.settings.batch.has_value()) return;
  p.options.batch = world;
  if (fs::exists(checkpoint) && (p.resume || p.settings.evaluate)) {
    const registration::Archive a = registration::read_archive(checkpoint, "SEARCH");
    p.options.batch = a.has_field("run.batch") ? std::stoll(a.field("run.batch", checkpoint)) : 1;
  }
}

double apply_budget(SearchParams& p, const search::OpCosts& costs) {
  const double default_ms = search::predicted_ms(costs, registration::Genotype::standard());
  if (p.default_budget()) p.options.budget_ms = default_ms;
  if (p.lead && !p.settings.evaluate) {
    std::fprintf(stderr, "forward-time budget: %s (the default network: %.0f ms at this grid)\n",
                 p.options.budget_ms > 0 ? (std::to_string(long(p.options.budget_ms + 0.5)) + " ms").c_str() : "none",
                 default_ms);
  }
  try {
    search::candidates_within(costs, p.options.budget_ms, search::searched_edges(p.options.edges),
                              p.info.network.genotype);
  } catch (const std::invalid_argument& e) {
    throw base::UsageError(std::string("--max-forward-ms: ") + e.what());
  }
  return default_ms;
}

// What each candidate costs here at the model grid: given (--op-cost), measured before
// in DIR, or measured now; kept in DIR/op_cost.json.
search::OpCosts operation_costs(const SearchParams& p, const Paths& out) {
  const std::string own = out.file("op_cost.json");
  const std::string from = p.settings.op_cost.empty() ? own : p.settings.op_cost;
  search::OpCosts costs;
  // Rank 0 measures (or reads) and writes DIR/op_cost.json; the others then read it.
  parallel::lead_first(p.collective, p.lead, [&] {
    if (fs::exists(from)) {
      try {
        costs = search::load_op_costs(from);
      } catch (const std::runtime_error& e) {
        throw io::IoError(e.what());
      }
      if (costs.grid != p.info.grid) throw io::IoError(from + ": measured at another grid than this search's");
      if (from != own && p.lead) search::save_op_costs(own, costs);
    } else {
      if (!p.lead) throw std::runtime_error(own + ": not written by rank 0");
      std::fprintf(stderr, "measuring the operations' forward times at %ldx%ldx%ld (%d threads)...\n",
                   long(p.info.grid[0]), long(p.info.grid[1]), long(p.info.grid[2]), at::get_num_threads());
      costs = search::measure_op_costs(p.info.grid, p.info.network, p.options.device, 3,
                                       [](const std::string& l) { std::fprintf(stderr, "%s\n", l.c_str()); });
      search::save_op_costs(own, costs);
    }
  });
  return costs;
}

namespace {

// The search's steps as the run loop logs them.
class SearchRun : public LoopedRun {
 public:
  SearchRun(search::Searcher& searcher, double budget) : LoopedRun(searcher), searcher_(searcher), budget_(budget) {}

  LoopStep step(double seconds) override {
    if (budget_ > 0) searcher_.set_progress(seconds / budget_);
    last_ = searcher_.step();
    return {last_.step, last_.rollbacks, search_log_line(searcher_, last_, seconds)};
  }

  std::string progress(double validation) const override {
    const auto l = searcher_.objective().lambda;
    const registration::Genotype g = searcher_.derived();
    char text[512];
    std::snprintf(text, sizeof text, "[%s] loss %.4f  val Dice %s  λ %.2f/%.2f/%.2f/%.2f/%.2f  %s  %.0f ms%s",
                  search::phase_name(last_.phase), last_.loss, dice_text(validation).c_str(), l[0], l[1], l[2], l[3],
                  l[4], g.to_string().c_str(), search::predicted_ms(searcher_.costs(), g),
                  last_.rollbacks ? (" rollbacks " + std::to_string(last_.rollbacks)).c_str() : "");
    return text;
  }

  const char* remedy() const override { return "smaller step sizes"; }
  const char* name() const override { return "search"; }

 private:
  search::Searcher& searcher_;
  double budget_;
  search::SearchStep last_;
};

}  // namespace

void search_loop(search::Searcher& searcher, const SearchParams& p, const Paths& out, double earlier) {
  const double budget = p.budget_minutes() * 60 * p.search_share();  // seconds; 0: by steps
  RunLoop loop;
  loop.log = out.file("search.log.jsonl");
  loop.failures = out.file("failures.jsonl");
  loop.checkpoint = out.file("search.ckpt");
  loop.steps = budget > 0 ? 0 : searcher.total_steps();
  loop.budget_seconds = budget;
  loop.earlier_seconds = earlier;
  loop.checkpoint_every = p.settings.checkpoint_every;
  loop.validate_every = p.settings.validate_every;
  loop.progress_every = 0;
  loop.progress_seconds = 20;
  loop.label = "search step";
  loop.validation = p.settings.validation == Validation::Inline ? Validation::Inline
                    : p.evaluations.empty()                      ? Validation::Off
                                                                 : Validation::Decoupled;
  loop.evaluations = p.evaluations;
  loop.on_validated = [&](int64_t, double dice) { searcher.notes["validation_dice"] = std::to_string(dice); };
  loop.before_checkpoint = [&](double seconds) { searcher.notes["seconds"] = std::to_string(seconds); };
  SearchRun run(searcher, budget);
  const RunOutcome outcome = run_loop(run, loop);
  searcher.notes["finished"] = "1";
  searcher.notes["seconds"] = std::to_string(outcome.seconds);
  searcher.save_checkpoint(loop.checkpoint);
  searcher.finish_checkpoints();
}

nlohmann::json export_search(search::Searcher& searcher, const SearchParams& p, const Paths& out, double default_ms) {
  const registration::Genotype genotype = searcher.derived();
  registration::NetworkSpec derived = p.info.network;
  derived.genotype = genotype;
  // Rank 0 measures and writes; the others need the summary's genotype and λ alone.
  const double measured = p.lead ? measure_forward_ms(derived, p.info.grid, p.options.device, 3) : 0.0;
  const double dice = std::stod(searcher.notes.count("validation_dice") ? searcher.notes["validation_dice"] : "nan");
  nlohmann::json run = {{"seed", p.options.seed},
                        {"mode", search::to_string(p.options.mode)},
                        {"order", search::to_string(p.options.order)},
                        {"path", search::to_string(p.options.path)},
                        {"arch_path", search::to_string(p.options.architecture_path)},
                        {"edges_searched", search::to_string(p.options.edges)},
                        {"budget_ms", p.options.budget_ms},
                        {"default_forward_ms", default_ms},
                        {"measured_forward_ms", measured},
                        {"threads", at::get_num_threads()},
                        {"search_seconds", std::stod(searcher.notes["seconds"])},
                        {"validation_dice", std::isfinite(dice) ? nlohmann::json(dice) : nlohmann::json()}};
  std::array<double, search::kEdges> start{};
  std::istringstream entropy(searcher.notes["entropy_start"]);
  for (double& h : start) entropy >> h;
  const nlohmann::json summary = search_summary(searcher, p.info, run, start);
  if (!p.lead) return summary;
  base::write_file_atomically(out.file("genotype.txt"), genotype_file_text(genotype, summary));
  base::write_file_atomically(out.file("genotype.json"), summary.dump(1) + "\n");
  base::write_file_atomically(out.file("report.html"),
                        qc::render_search_report(log_with_evaluations(out.file("search.log.jsonl"), out.file("search.validation.jsonl")), summary));
  std::fprintf(stderr, "derived genotype: %s\n  λ: %s\n  forward %.0f ms predicted, %.0f ms measured (budget %s)\n",
               genotype.to_string().c_str(), searcher.objective().to_string().c_str(),
               search::predicted_ms(searcher.costs(), genotype), measured,
               p.options.budget_ms > 0 ? (std::to_string(long(p.options.budget_ms + 0.5)) + " ms").c_str() : "none");
  return summary;
}

void retrain(const SearchParams& p, const Paths& out, const registration::TrainingSet& data, nlohmann::json summary) {
  registration::ModelInfo info = p.info;
  std::string names;
  for (const auto& op : summary["genotype"]) names += op.get<std::string>() + " ";
  info.network.genotype = registration::Genotype::parse(names);
  registration::TrainOptions train;
  train.learning_rate = p.options.weight_lr;
  train.objective = registration::ObjectiveWeights::parse(summary["objective"].get<std::string>());
  train.dice_weight = p.options.dice_weight;
  train.augment = p.options.augment;
  train.deformation_voxels = p.options.deformation_voxels;
  train.seed = p.options.seed;
  train.device = p.options.device;
  train.batch = p.options.batch;  // the search's global batch
  const bool by_time = p.settings.budget_minutes.has_value() && !p.settings.retrain_steps.has_value();
  train.steps = by_time ? int64_t(1) << 50 : p.retrain_steps();
  at::manual_seed(p.options.seed);
  registration::Model model = registration::make_model(info);
  registration::Trainer trainer(model, data, train);
  if (p.collective) trainer.distribute(*p.collective);
  RunLoop loop;
  loop.log = out.file("retrain.log.jsonl");
  loop.failures = out.file("failures.jsonl");
  loop.checkpoint = out.file("retrain.ckpt");
  loop.steps = by_time ? 0 : train.steps;  // by time: the budget alone ends it
  loop.budget_seconds = by_time ? p.budget_minutes() * 60 - summary["search_seconds"].get<double>() : 0;
  loop.checkpoint_every = 4 * p.settings.checkpoint_every;
  loop.validate_every = p.settings.validate_every;
  loop.label = "retrain step";
  const bool resumed = fs::exists(loop.checkpoint);
  if (resumed) {
    trainer.resume(loop.checkpoint);
    if (p.lead) {
      loop.earlier_seconds = pipeline::cut_log_to(loop.log, trainer.steps_done());
      std::fprintf(stderr, "resumed retraining from %s at step %ld\n", loop.checkpoint.c_str(), long(trainer.steps_done()));
    }
  }
  // Validation decoupled by default, as train's: a watcher process evaluates DIR/retrain.ckpt
  // into DIR/retrain.validation.jsonl and keeps the best as DIR/retrain.best.{ckpt,autoreg}.
  ValidationRun v;
  v.out = out.file("retrain");
  v.manifest = p.settings.manifest;
  v.cache = p.cache;
  v.similarity = registration::Similarity::Ncc;  // the preprocessing's affine, as load_data's
  v.device = p.options.device;
  v.size_multiple = 4;
  v.max_unreadable = p.settings.max_unreadable;
  v.seed = p.options.seed;
  v.threads = p.settings.validation_threads;
  v.fresh = !resumed;
  v.executable = p.settings.executable;
  const std::unique_ptr<ValidationProcess> watcher =
      start_validation(v, p.settings.validation, p.lead, trainer.validation_pair_count() > 0, loop);
  const RunOutcome outcome = pipeline::run_training(trainer, loop);
  if (!p.lead) return;
  double validation = outcome.validation_dice;
  if (watcher) {
    // The watcher evaluates the last checkpoint, then ends: the model's Dice is its.
    for (const auto& e : watcher->finish()) {
      if (e.step == trainer.steps_done()) validation = e.dice;
    }
  }
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  auto& notes = model.info.notes;
  notes["trained"] = date;
  notes["manifest"] = fs::path(p.settings.manifest).filename().string();
  notes["found_by"] = std::string("autoreg search (mode ") + search::to_string(p.options.mode) + ", order " +
                      search::to_string(p.options.order) + ", edges " + search::to_string(p.options.edges) + ", path " +
                      search::to_string(p.options.path) + ", seed " + std::to_string(p.options.seed) + ")";
  notes["objective"] = train.objective->to_string();
  notes["search_seconds"] = std::to_string(summary["search_seconds"].get<double>());
  notes["search_validation_dice"] = summary["validation_dice"].dump();
  notes["forward_ms_measured"] = std::to_string(summary["measured_forward_ms"].get<double>());
  notes["forward_budget_ms"] = std::to_string(p.options.budget_ms);
  notes["steps"] = std::to_string(trainer.steps_done());
  notes["training_seconds"] = std::to_string(outcome.seconds);
  notes["dice_weight"] = std::to_string(train.dice_weight);
  notes["learning_rate"] = std::to_string(train.learning_rate);
  if (std::isfinite(validation)) notes["validation_dice"] = std::to_string(validation);
  registration::save_model(out.file("model.autoreg"), model);
  summary["retrain_steps"] = trainer.steps_done();
  summary["retrain_seconds"] = outcome.seconds;
  summary["retrain_validation_dice"] = std::isfinite(validation) ? nlohmann::json(validation) : nlohmann::json();
  base::write_file_atomically(out.file("genotype.json"), summary.dump(1) + "\n");
  base::write_file_atomically(out.file("report.html"),
                        qc::render_search_report(log_with_evaluations(out.file("search.log.jsonl"), out.file("search.validation.jsonl")), summary));
  std::fprintf(stderr, "wrote %s (retrained %ld steps; validation Dice %s)\n", out.file("model.autoreg").c_str(),
               long(trainer.steps_done()), dice_text(validation).c_str());
}

}  // namespace autoreg::pipeline::detail
