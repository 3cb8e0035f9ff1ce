#include "autoreg/runs/train_job.h"
#include "autoreg/registration/similarity.h"

#include <ATen/ATen.h>

#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>

#include "long_run.h"
#include "autoreg/base/errors.h"
#include "autoreg/io/manifest.h"
#include "autoreg/io/volume.h"
#include "autoreg/parallel/evaluation.h"
#include "autoreg/parallel/failure.h"
#include "autoreg/parallel/worker.h"
#include "autoreg/runs/dataset.h"
#include "autoreg/runs/exit_codes.h"
#include "autoreg/pair/option_values.h"
#include "autoreg/pair/output_files.h"
#include "autoreg/runs/run_log.h"
#include "autoreg/runs/run_loop.h"
#include "autoreg/registration/model_file.h"
#include "autoreg/registration/train.h"
#include "validation_process.h"

namespace autoreg::pipeline {
namespace {

using base::UsageError;

// What the network needs of the grid's sizes: the U-Net halves the grid four times,
// AutoReg twice.
int64_t size_multiple(const TrainSettings& s) { return s.unet ? 16 : 4; }

registration::ModelInfo model_info(const TrainSettings& s) {
  registration::ModelInfo info;
  auto& n = info.network;
  n.kind = s.unet ? "unet" : "autoreg";
  if (!s.genotype.empty()) n.genotype = detail::read_genotype_file(s.genotype);
  n.diffeomorphic = s.diffeomorphic;
  n.feature_transforms = s.feature_noise > 0;
  info.spacing = {s.spacing, s.spacing, s.spacing};
  info.grid = s.grid;
  return info;
}

registration::TrainOptions train_options(const TrainSettings& s) {
  registration::TrainOptions o;
  o.steps = s.steps;
  o.learning_rate = s.learning_rate;
  o.similarity = registration::parse_similarity(s.similarity);
  o.smoothness = s.lambda;
  o.spike_factor = s.max_gradient_spike;
  if (!s.objective.empty()) o.objective = registration::ObjectiveWeights::parse(s.objective);
  o.dice_weight = s.dice_weight;
  o.synthetic_fraction = s.synthetic;
  o.augment = s.augment;
  o.feature_noise = s.feature_noise;
  if (o.feature_noise > 0) o.trainable = registration::Trainable::Weights;  // γ and β stay the identity the noise perturbs
  o.seed = s.run.seed;
  o.device = s.run.device;
  o.async_checkpoints = !s.sync_checkpoints;
  o.batch = s.batch.value_or(1);
  return o;
}

// The model's notes: how it was trained.
void note_training(registration::ModelInfo& info, const TrainSettings& s, const registration::TrainOptions& o,
                   const registration::TrainingSet& data, int64_t steps, double validation, double seconds) {
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  auto& notes = info.notes;
  notes["trained"] = date;
  notes["manifest"] = std::filesystem::path(s.manifest).filename().string();
  notes["mode"] = data.atlas ? "atlas" : "pairwise";
  notes["subjects"] = std::to_string(data.train.size()) + " train, " + std::to_string(data.validation.size()) + " validation";
  notes["steps"] = std::to_string(steps);
  notes["similarity"] = registration::similarity_name(o.similarity);
  notes["lambda"] = std::to_string(o.smoothness);
  if (o.objective) notes["objective"] = o.objective->to_string();
  notes["dice_weight"] = std::to_string(o.dice_weight);
  notes["synthetic_fraction"] = std::to_string(o.synthetic_fraction);
  if (o.feature_noise > 0) notes["feature_noise"] = std::to_string(o.feature_noise);
  notes["learning_rate"] = std::to_string(o.learning_rate);
  if (std::isfinite(validation)) notes["validation_dice"] = std::to_string(validation);
  notes["training_seconds"] = std::to_string(seconds);
}

// Rank 0 preprocesses into the cache; the others read what it wrote.
registration::TrainingSet load_subjects(const TrainSettings& s, registration::ModelInfo& info,
                                        const registration::TrainOptions& o, parallel::Distributed& dist,
                                        const std::string& failures) {
  const bool lead = dist.lead();
  const io::Manifest manifest = io::read_manifest(s.manifest);
  DatasetOptions dataset;
  dataset.cache_dir = s.run.cache_for(s.out);
  dataset.max_unreadable_fraction = s.max_unreadable;
  dataset.one_subject_pairs = o.augment;
  dataset.affine.similarity = o.similarity;  // mind: mutual information, as in register
  dataset.progress = [&](const std::string& line) {
    if (lead) std::fprintf(stderr, "preprocess: %s\n", line.c_str());
  };
  dataset.skipped = [&](const std::string& what) {
    if (lead) parallel::append_failure(failures, parallel::skipped_row(what));
  };
  registration::TrainingSet data;
  parallel::lead_first(dist.collective.get(), lead, [&] {
    try {
      data = load_training_set(manifest, info, size_multiple(s), dataset);
    } catch (const std::invalid_argument& e) {
      throw io::IoError(e.what());  // a manifest that cannot train: bad input
    }
  });
  if (lead) std::fprintf(stderr, "training set: %zu training, %zu validation subjects%s; model grid %ldx%ldx%ld at %g mm\n",
               data.train.size(), data.validation.size(), data.atlas ? ", atlas mode" : ", pairwise mode",
               long(info.grid[0]), long(info.grid[1]), long(info.grid[2]), info.spacing[0]);
  return data;
}

TrainResult train_rank(const TrainSettings& s, parallel::Distributed& dist) {
  const bool lead = dist.lead();
  const std::string log = s.run.log_for(s.out), failures = s.out + ".failures.jsonl";
  io::check_output(s.out);
  io::check_output(log);
  const std::string checkpoint = s.out + ".ckpt";
  // Restarted by a launcher (torchrun, --nproc): on from the last checkpoint, if any.
  const bool resume = s.run.resume || (dist.restarted() && std::filesystem::exists(checkpoint));
  if (resume && !std::filesystem::exists(checkpoint)) {
    throw UsageError("--resume: no checkpoint " + checkpoint + " to resume from");
  }
  registration::ModelInfo info = model_info(s);
  registration::TrainOptions o = train_options(s);
  o.inject_nan_at = parallel::injected_non_finite_step(dist.rank());  // tests (parallel/worker.h)
  if (!s.batch) {
    // One pair per rank; resumed: the checkpoint's global batch, whatever the ranks now.
    o.batch = dist.world();
    if (resume) {
      const registration::Archive a = registration::read_archive(checkpoint, "CHECKPOINT");
      o.batch = a.has_field("run.batch") ? std::stoll(a.field("run.batch", checkpoint)) : 1;
    }
  }
  const registration::TrainingSet data = load_subjects(s, info, o, dist, failures);
  if (s.epochs > 0) o.steps = s.epochs * int64_t(data.train.size());

  at::manual_seed(o.seed);
  registration::Model model = registration::make_model(info);
  const std::unique_ptr<registration::Trainer> made = detail::make_trainer(model, data, o, s.manifest);
  registration::Trainer& trainer = *made;
  if (dist.collective) trainer.distribute(*dist.collective);
  if (lead && dist.collective) {
    std::fprintf(stderr, "data-parallel: %d ranks, %ld pairs per step (global batch)\n", dist.world(), long(o.batch));
  }
  if (lead && trainer.validation_pair_count() == 0) {
    std::fprintf(stderr, "note: no validation Dice: it needs labelled 'val' subjects and %s\n",
                 data.atlas ? "an atlas with labels" : "at least two of them (pairwise mode)");
  }
  RunLoop loop;
  if (resume) {
    trainer.resume(checkpoint);
    if (lead) {
      loop.earlier_seconds = cut_log_to(log, trainer.steps_done());
      std::fprintf(stderr, "resumed from %s at step %ld\n", checkpoint.c_str(), long(trainer.steps_done()));
    }
  }
  // Decoupled validation: a watcher process evaluates the checkpoints (rank 0 starts it).
  ValidationRun v;
  v.out = s.out;
  v.manifest = s.manifest;
  v.cache = s.run.cache_for(s.out);
  v.similarity = o.similarity;
  v.device = o.device;
  v.size_multiple = size_multiple(s);
  v.max_unreadable = s.max_unreadable;
  v.seed = o.seed;
  v.threads = s.validation_threads;
  v.fresh = !resume;
  v.executable = s.executable;
  const std::unique_ptr<ValidationProcess> watcher =
      start_validation(v, s.validation, lead, trainer.validation_pair_count() > 0, loop);
  loop.log = log;
  loop.failures = failures;
  loop.checkpoint = checkpoint;
  loop.steps = o.steps;
  loop.checkpoint_every = s.checkpoint_every;
  loop.validate_every = s.validate_every;
  const RunOutcome outcome = run_training(trainer, loop);
  TrainResult result{s.out, trainer.steps_done(), outcome.validation_dice, outcome.seconds, lead};
  if (!lead) return result;
  if (watcher) {
    // The watcher evaluates the last checkpoint, then ends: the model's Dice is its.
    const auto evaluated = watcher->finish();
    const parallel::EvaluatedStep* best = nullptr;
    for (const auto& e : evaluated) {
      if (e.best) best = &e;
      if (e.step == trainer.steps_done()) result.validation_dice = e.dice;
    }
    if (std::isfinite(result.validation_dice)) {
      std::fprintf(stderr, "validation Dice %.4f at step %ld\n", result.validation_dice, long(trainer.steps_done()));
    }
    if (best) {
      std::fprintf(stderr, "best validation Dice %.4f at step %ld: %s.best.ckpt\n", best->dice, long(best->step),
                   s.out.c_str());
    }
  }
  note_training(model.info, s, o, data, trainer.steps_done(), result.validation_dice, outcome.seconds);
  registration::save_model(s.out, model);
  std::fprintf(stderr, "wrote %s (%ld steps, %s this run)\n", s.out.c_str(), long(trainer.steps_done()),
               duration(outcome.seconds_this_run).c_str());
  return result;
}

// Under nproc: the ranks are `autoreg train` processes of these settings; the result is
// what the model they wrote notes.
TrainResult train_supervised(const TrainSettings& s) {
  detail::supervise_job(to_arguments(s), s.executable, s.scale, s.run.threads, s.out + ".failures.jsonl");
  const registration::Archive a = registration::read_archive(s.out, "MODEL");
  const auto note = [&](const char* key, double otherwise) {
    const std::string field = std::string("note.") + key;
    return a.has_field(field) ? std::stod(a.field(field, s.out)) : otherwise;
  };
  return {s.out, int64_t(note("steps", 0)), note("validation_dice", std::nan("")), note("training_seconds", 0), true};
}

}  // namespace

void validate(const TrainSettings& s) {
  const std::string log = s.run.log_for(s.out);
  refuse_overwrite({&s.out, &log}, {&s.manifest, &s.genotype});
  if (s.out == log) throw UsageError("--log and --out name the same file");
  if (s.unet && !s.genotype.empty()) throw UsageError("--genotype and --unet exclude each other");
  if (!(s.spacing > 0)) throw UsageError("--spacing must be > 0");
  for (int64_t size : s.grid) {
    if (size % size_multiple(s) != 0) {
      throw UsageError("--grid: the " + std::string(s.unet ? "unet" : "autoreg") +
                       " network needs sizes that are multiples of " + std::to_string(size_multiple(s)));
    }
  }
  if (s.steps <= 0 || s.epochs < 0) throw UsageError("--steps and --epochs must be positive");
  if (!(s.learning_rate > 0)) throw UsageError("--learning-rate must be > 0");
  if (s.lambda < 0 || s.dice_weight < 0) throw UsageError("--lambda and --dice-weight must be >= 0");
  if (s.synthetic < 0 || s.synthetic > 1) throw UsageError("--synthetic must be in [0, 1]");
  if (s.checkpoint_every <= 0 || s.validate_every <= 0) {
    throw UsageError("--checkpoint-every and --validate-every must be positive");
  }
  if (s.max_gradient_spike != 0 && !(s.max_gradient_spike > 1)) throw UsageError("--max-gradient-spike must be > 1 (or 0: off)");
  if (!s.objective.empty()) {
    try {
      registration::ObjectiveWeights::parse(s.objective);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--objective: ") + e.what());
    }
  }
  if (!(s.feature_noise >= 0)) throw UsageError("--feature-noise must be >= 0");
  if (s.batch && *s.batch < 1) throw UsageError("--batch must be at least 1");
  if (s.validation_threads < 1) throw UsageError("--validation-threads must be at least 1");
  if (!(s.max_unreadable >= 0 && s.max_unreadable < 1)) throw UsageError("--max-unreadable must be in [0, 1)");
  parallel::validate(s.scale);
}

const base::Schema<TrainSettings>& train_schema() {
  using S = TrainSettings;
  static const base::Schema<S> schema = [] {
    base::Schema<S> rows{
        base::text_field<S>("manifest", "manifest", "FILE", "CSV manifest of the dataset", &S::manifest, true),
        base::text_field<S>("out", "out", "FILE", "the model file to write (.autoreg)", &S::out, true),
        base::text_field<S>("genotype", "genotype", "FILE",
                            "AutoReg genotype file (12 operation names; default: 3³ convolutions everywhere)", &S::genotype),
        base::switch_field<S>("unet", "unet", "train the VoxelMorph-style U-Net baseline instead", &S::unet),
        {"grid", "grid", "DxHxW", "model grid DxHxW at --spacing (default: the reference's foreground box + 8 mm)",
         [](const S& s) { return grid_text(s.grid); }, [](S& s, const std::string& t) { s.grid = parse_grid(t); }},
        base::number_field<S>("spacing", "spacing", "MM", "model grid spacing in mm", &S::spacing),
        {"epochs", "epochs", "E", "instead of --steps: passes over the training subjects",
         [](const S& s) { return s.epochs > 0 ? std::to_string(s.epochs) : std::string(); },
         [](S& s, const std::string& t) { s.epochs = base::whole_number("epochs", t, 1); }},
        {"steps", "steps", "N", "training steps (one pair each)",
         [](const S& s) { return s.epochs > 0 ? std::string() : std::to_string(s.steps); },
         [](S& s, const std::string& t) { s.steps = base::whole_number("steps", t); }},
        base::with_aliases(base::number_field<S>("learning_rate", "learning-rate", "R", "Adam learning rate", &S::learning_rate),
                           {"lr"}),
        {"similarity", "similarity", registration::kSimilarityNames.joined(), "the similarity (ncc: window 9)",
         [](const S& s) { return s.objective.empty() ? s.similarity : std::string(); },
         [](S& s, const std::string& t) { s.similarity = registration::similarity_name(registration::parse_similarity(t)); }},
        {"lambda", "lambda", "λ", "weight of the smoothness term",
         [](const S& s) { return s.objective.empty() ? base::exact_text(s.lambda) : std::string(); },
         [](S& s, const std::string& t) { s.lambda = base::real_number("lambda", t); }},
        base::text_field<S>("objective", "objective", "WEIGHTS",
                            "weights of the objective terms instead of --similarity and --lambda, e.g. a search's: "
                            "ncc9=1,ncc7_half=0.5,ncc5_quarter=0.25,mind=0.1,smoothness=0.8 (missing terms 0)",
                            &S::objective),
        base::number_field<S>("max_gradient_spike", "max-gradient-spike", "X",
                              "a gradient norm over this many times its running average is a fault: back to the last good "
                              "state at half the learning rate (0: off)",
                              &S::max_gradient_spike),
        base::number_field<S>("dice_weight", "dice-weight", "W", "weight of soft Dice on label maps (0 = unsupervised)",
                              &S::dice_weight),
        base::number_field<S>("synthetic", "synthetic", "F",
                              "share of images synthesised from their label maps (the moving image, and in pairwise mode "
                              "the fixed one too, each with this probability; subjects without an image always are)",
                              &S::synthetic),
        base::number_field<S>("feature_noise", "feature-noise", "S",
                              "σ of random per-channel scale and shift noise after every operation in each training step "
                              "(robustness to new scanners; the model gets feature transformation layers; 0: none)",
                              &S::feature_noise),
        base::off_switch_field<S>("augment", "no-augment", "no random deformations and intensity changes", &S::augment),
        base::off_switch_field<S>("diffeomorphic", "no-diffeomorphic",
                                  "predict displacements directly instead of integrating velocity fields", &S::diffeomorphic),
        base::whole_field<S>("checkpoint_every", "checkpoint-every", "N", "steps between checkpoints", &S::checkpoint_every),
        base::whole_field<S>("validate_every", "validate-every", "N", "with --validation inline: steps between validations",
                             &S::validate_every)};
    for (auto& row : base::nested(model_run_schema("JSON-lines training log"), &S::run)) rows.push_back(std::move(row));
    base::Schema<S> rest{
        {"batch", "batch", "G", "pairs per step over all ranks, the global batch (default: one per rank; resumed: the checkpoint's)",
         [](const S& s) { return s.batch ? std::to_string(*s.batch) : std::string(); },
         [](S& s, const std::string& t) { s.batch = base::whole_number("batch", t); }},
        base::number_field<S>("max_unreadable", "max-unreadable", "F",
                              "share of manifest rows that may be unreadable (reported, skipped and listed in "
                              "<out>.failures.jsonl; 0: none)",
                              &S::max_unreadable),
        {"validation", "validation", kValidationNames.joined(),
         "decoupled (a separate process evaluates each checkpoint, <out>.validation.jsonl, and keeps the best, "
         "<out>.best.ckpt), inline (every --validate-every steps; training waits) or off",
         [](const S& s) { return std::string(to_string(s.validation)); },
         [](S& s, const std::string& t) { s.validation = parse_validation(t); }},
        base::whole_field<S>("validation_threads", "validation-threads", "T", "threads of the decoupled validation process",
                             &S::validation_threads),
        base::switch_field<S>("sync_checkpoints", "sync-checkpoints",
                              "write checkpoints in the training thread, not in the background (to measure what that costs)",
                              &S::sync_checkpoints)};
    for (auto& row : rest) rows.push_back(std::move(row));
    for (auto& row : base::nested(scale_out_schema(), &S::scale)) rows.push_back(std::move(row));
    return rows;
  }();
  return schema;
}

std::vector<std::string> to_arguments(const TrainSettings& s) { return base::arguments("train", train_schema(), s); }

TrainResult train(const TrainSettings& s) {
  validate(s);
  if (s.scale.nproc > 0) return train_supervised(s);
  parallel::Distributed dist = parallel::join_if_distributed(s.scale, s.run.device);
  try {
    return train_rank(s, dist);
  } catch (const base::Interrupted&) {
    throw;
  } catch (const std::exception& e) {
    parallel::diagnose_own_failure(dist, e, exit_code(e), s.out + ".failures.jsonl");
    throw;
  }
}

}  // namespace autoreg::pipeline
