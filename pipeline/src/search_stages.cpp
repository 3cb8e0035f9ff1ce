#include "search_stages.h"

#include <ATen/Parallel.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <optional>
#include <sstream>

#include "autoreg/base/atomic_file.h"
#include "autoreg/base/stopwatch.h"
#include "autoreg/io/manifest.h"
#include "autoreg/io/volume.h"
#include "autoreg/parallel/evaluation.h"
#include "autoreg/parallel/failure.h"
#include "autoreg/parallel/worker.h"
#include "autoreg/pipeline/dataset.h"
#include "autoreg/qc/search_report.h"
#include "autoreg/base/errors.h"
#include "autoreg/pipeline/run_log.h"
#include "autoreg/parallel/ranks.h"
#include "search_outputs.h"
#include "autoreg/pipeline/training_loop.h"
#include "validation_process.h"

namespace autoreg::pipeline::detail {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string dice_text(double v) { return std::isfinite(v) ? std::to_string(v).substr(0, 5) : "-"; }

}  // namespace

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

void search_loop(search::Searcher& searcher, const SearchParams& p, const Paths& out, double earlier) {
  const bool lead = p.lead;
  const std::string log_path = out.file("search.log.jsonl"), checkpoint = out.file("search.ckpt");
  std::ofstream log;
  if (lead) {
    log.open(log_path, p.resume ? std::ios::app : std::ios::trunc);
    if (!log) throw io::IoError(log_path + ": cannot write the search log");
  }
  const double budget = p.budget_minutes() * 60 * p.search_share();  // seconds; 0: by steps
  const auto started = Clock::now();
  // Data-parallel, the ranks decide together after each step, in one collective: rank 0's
  // clock is the budget's (the schedule follows it: the same phase and temperature on
  // every rank), and a stop asked for on any rank stops them all.
  registration::Collective* const collective = searcher.collective();
  struct Decision {
    double seconds;
    bool stop;
  };
  const auto decide = [&]() -> Decision {
    const double mine = earlier + base::seconds_since(started);
    if (!collective) return {mine, pipeline::stop_requested()};
    std::vector<at::Tensor> v{at::tensor({lead ? mine : 0.0, pipeline::stop_requested() ? 1.0 : 0.0}, at::kDouble)};
    collective->sum(v);
    return {v[0][0].item<double>(), v[0][1].item<double>() > 0};
  };
  Decision decided = decide();
  const auto save = [&] {
    searcher.notes["seconds"] = std::to_string(decided.seconds);
    searcher.save_checkpoint(checkpoint);
  };
  const int64_t first = searcher.steps_done();
  int64_t logged = first, rollbacks = searcher.rollbacks();
  double validation = std::nan("");
  std::optional<parallel::EvaluationFollower> evaluations;
  if (!p.evaluations.empty()) evaluations.emplace(p.evaluations, first);
  auto last_line = Clock::now() - std::chrono::hours(1);
  while (budget > 0 ? decided.seconds < budget : !searcher.finished()) {
    if (budget > 0) searcher.set_progress(decided.seconds / budget);
    parallel::inject_failure(searcher.steps_done() + 1, searcher.rank());  // tests (worker.h)
    const search::SearchStep r = searcher.step();
    parallel::report_step(r.step);
    if (lead && r.rollbacks > rollbacks) {
      parallel::append_failure(out.file("failures.jsonl"), parallel::rolled_back(r.step, r.rollbacks, "smaller step sizes"));
    }
    rollbacks = r.rollbacks;
    if (lead && r.step <= logged) {
      // A rollback (non-finite step) went back to an earlier state: the log forgets the
      // abandoned steps, as a resume would.
      log.close();
      pipeline::cut_log_to(log_path, r.step - 1);
      log.open(log_path, std::ios::app);
    }
    logged = r.step;
    decided = decide();
    const bool last = budget > 0 ? decided.seconds >= budget : searcher.finished();
    nlohmann::json line = search_log_line(searcher, r, decided.seconds);
    if (lead && p.settings.validation == Validation::Inline && (r.step % p.settings.validate_every == 0 || last)) {
      validation = searcher.validate();
      if (std::isfinite(validation)) line["validation_dice"] = validation;
      searcher.notes["validation_dice"] = std::to_string(validation);
    }
    if (lead && evaluations) {
      // What the decoupled evaluation has done since the last look.
      if (const auto e = evaluations->latest()) {
        validation = e->dice;
        if (std::isfinite(validation)) line["validation_dice"] = validation;
        line["validated_step"] = e->step;
      }
    }
    if (lead) log << line.dump() << "\n" << std::flush;
    if (r.step % p.settings.checkpoint_every == 0 || last) save();
    if (lead && (base::seconds_since(last_line) > 20 || last || r.step == first + 1)) {
      last_line = Clock::now();
      const double per_step = base::seconds_since(started) / double(std::max<int64_t>(1, r.step - first));
      const double left = budget > 0 ? budget - decided.seconds : per_step * double(searcher.total_steps() - r.step);
      const auto l = searcher.objective().lambda;
      const registration::Genotype g = searcher.derived();
      std::fprintf(stderr,
                   "search step %ld%s [%s] loss %.4f  val Dice %s  λ %.2f/%.2f/%.2f/%.2f/%.2f  %s  %.0f ms%s  %.2f s/step  %s left\n",
                   long(r.step), budget > 0 ? "" : ("/" + std::to_string(searcher.total_steps())).c_str(), search::phase_name(r.phase),
                   r.loss, dice_text(validation).c_str(), l[0], l[1], l[2], l[3], l[4], g.to_string().c_str(),
                   search::predicted_ms(searcher.costs(), g),
                   r.rollbacks ? (" rollbacks " + std::to_string(r.rollbacks)).c_str() : "", per_step,
                   pipeline::duration(std::max(0.0, left)).c_str());
    }
    if (last) break;
    if (decided.stop) {
      save();
      searcher.finish_checkpoints();
      throw base::Interrupted("interrupted (search) at step " + std::to_string(r.step) + ": checkpoint written; continue with --resume");
    }
  }
  searcher.notes["finished"] = "1";
  save();
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
  TrainingLoop loop;
  loop.log = out.file("retrain.log.jsonl");
  loop.failures = out.file("failures.jsonl");
  loop.checkpoint = out.file("retrain.ckpt");
  loop.steps = train.steps;
  loop.budget_seconds = by_time ? p.budget_minutes() * 60 - summary["search_seconds"].get<double>() : 0;
  loop.checkpoint_every = 4 * p.settings.checkpoint_every;
  loop.validate_every = p.settings.validate_every;
  loop.label = "retrain step";
  const bool resumed = fs::exists(loop.checkpoint);
  if (resumed) {
    trainer.resume(loop.checkpoint);
    if (p.lead) {
      loop.earlier_seconds = pipeline::cut_log_to(loop.log, trainer.step());
      std::fprintf(stderr, "resumed retraining from %s at step %ld\n", loop.checkpoint.c_str(), long(trainer.step()));
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
  const TrainingOutcome outcome = pipeline::run_training(trainer, loop);
  if (!p.lead) return;
  double validation = outcome.validation_dice;
  if (watcher) {
    // The watcher evaluates the last checkpoint, then ends: the model's Dice is its.
    for (const auto& e : watcher->finish()) {
      if (e.step == trainer.step()) validation = e.dice;
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
  notes["steps"] = std::to_string(trainer.step());
  notes["training_seconds"] = std::to_string(outcome.seconds);
  notes["dice_weight"] = std::to_string(train.dice_weight);
  notes["learning_rate"] = std::to_string(train.learning_rate);
  if (std::isfinite(validation)) notes["validation_dice"] = std::to_string(validation);
  registration::save_model(out.file("model.autoreg"), model);
  summary["retrain_steps"] = trainer.step();
  summary["retrain_seconds"] = outcome.seconds;
  summary["retrain_validation_dice"] = std::isfinite(validation) ? nlohmann::json(validation) : nlohmann::json();
  base::write_file_atomically(out.file("genotype.json"), summary.dump(1) + "\n");
  base::write_file_atomically(out.file("report.html"),
                        qc::render_search_report(log_with_evaluations(out.file("search.log.jsonl"), out.file("search.validation.jsonl")), summary));
  std::fprintf(stderr, "wrote %s (retrained %ld steps; validation Dice %s)\n", out.file("model.autoreg").c_str(),
               long(trainer.step()), dice_text(validation).c_str());
}

}  // namespace autoreg::pipeline::detail
