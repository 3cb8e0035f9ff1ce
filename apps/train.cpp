// autoreg train --manifest M --out model.autoreg [--genotype FILE | --unet]
//               [--grid DxHxW] [--spacing MM] [--steps N | --epochs E] [--lr R]
//               [--similarity ncc|mse|mind] [--lambda λ] [--objective WEIGHTS] [--dice-weight W]
//               [--synthetic F] [--feature-noise S] [--no-augment] [--checkpoint-every N] [--validate-every N]
//               [--cache DIR] [--log FILE] [--device cpu|cuda] [--threads T] [--seed S] [--resume]
//               [--batch G] [--nproc N [--max-restarts R]] [--collective-timeout S]
//
// Preprocesses the manifest's subjects onto the model grid (cached), trains the network,
// writes a checkpoint (<out>.ckpt) every N steps and the model at the end. A progress
// line goes to stderr, one JSON line per step to the log (<out>.log.jsonl). --resume
// continues from the checkpoint and cuts the log back to it. SIGINT/SIGTERM write a
// checkpoint and exit with 4. Under torchrun or srun (or --nproc) the ranks train
// data-parallel: rank 0 alone preprocesses, logs, checkpoints and writes the model;
// failures are diagnosed in <out>.failures.jsonl.
#include <tclap/CmdLine.h>

#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "autoreg/io/manifest.h"
#include "autoreg/io/volume.h"
#include "autoreg/pipeline/dataset.h"
#include "autoreg/registration/model_file.h"
#include "autoreg/registration/train.h"
#include "exit_codes.h"
#include "autoreg/parallel/evaluation.h"
#include "autoreg/parallel/failure.h"
#include "autoreg/parallel/worker.h"
#include "options.h"
#include "run_args.h"
#include "run_log.h"
#include "scale_out.h"
#include "training_loop.h"
#include "validation_process.h"

namespace autoreg::apps {
namespace {

struct TrainParams {
  std::string manifest, out, cache, log, failures;
  registration::ModelInfo info;
  registration::TrainOptions options;
  int64_t epochs = 0;  // > 0: steps = epochs × training subjects
  int64_t size_multiple = 4;  // what the network needs of the grid's sizes
  int64_t checkpoint_every = 100, validate_every = 100;
  bool resume = false;
  bool batch_set = false;  // --batch given (else: one pair per rank, or the checkpoint's)
  double max_unreadable = 0;  // share of rows that may be unreadable (skipped)
  std::string validation = "decoupled";  // inline | decoupled | off (training_loop.h)
  int validation_threads = 1;
};

int train(TrainParams p, Distributed& dist) {
  const bool lead = dist.lead();
  io::check_output(p.out);
  io::check_output(p.log);
  const std::string checkpoint = p.out + ".ckpt";
  // Restarted by a launcher (torchrun, --nproc): on from the last checkpoint, if any.
  if (dist.restarted() && std::filesystem::exists(checkpoint)) p.resume = true;
  if (p.resume && !std::filesystem::exists(checkpoint)) {
    throw UsageError("--resume: no checkpoint " + checkpoint + " to resume from");
  }
  if (!p.batch_set) {
    // One pair per rank; resumed: the checkpoint's global batch, whatever the ranks now.
    p.options.batch = dist.world();
    if (p.resume) {
      const registration::Archive a = registration::read_archive(checkpoint, "CHECKPOINT");
      p.options.batch = a.has_field("run.batch") ? std::stoll(a.field("run.batch", checkpoint)) : 1;
    }
  }
  const io::Manifest manifest = io::read_manifest(p.manifest);
  pipeline::DatasetOptions dataset;
  dataset.cache_dir = p.cache;
  dataset.max_unreadable_fraction = p.max_unreadable;
  dataset.one_subject_pairs = p.options.augment;
  dataset.affine.similarity = p.options.similarity;  // mind: mutual information, as in register
  dataset.progress = [&](const std::string& line) {
    if (lead) std::fprintf(stderr, "preprocess: %s\n", line.c_str());
  };
  dataset.skipped = [&](const std::string& what) {
    if (lead) parallel::append_failure(p.failures, parallel::skipped_row(what));
  };
  registration::TrainingSet data;
  // Rank 0 preprocesses into the cache; the others read what it wrote.
  lead_first(dist.collective.get(), lead, [&] {
    try {
      data = pipeline::load_training_set(manifest, p.info, p.size_multiple, dataset);
    } catch (const std::invalid_argument& e) {
      throw io::IoError(e.what());  // a manifest that cannot train: bad input
    }
  });
  if (lead) std::fprintf(stderr, "training set: %zu training, %zu validation subjects%s; model grid %ldx%ldx%ld at %g mm\n",
               data.train.size(), data.validation.size(), data.atlas ? ", atlas mode" : ", pairwise mode",
               long(p.info.grid[0]), long(p.info.grid[1]), long(p.info.grid[2]), p.info.spacing[0]);
  if (p.epochs > 0) p.options.steps = p.epochs * int64_t(data.train.size());

  at::manual_seed(p.options.seed);
  registration::Model model = registration::make_model(p.info);
  std::unique_ptr<registration::Trainer> made;
  try {
    made = std::make_unique<registration::Trainer>(model, data, p.options);
  } catch (const std::invalid_argument& e) {
    throw io::IoError(p.manifest + ": " + e.what());
  }
  registration::Trainer& trainer = *made;
  if (dist.collective) trainer.distribute(*dist.collective);
  if (lead && dist.collective) {
    std::fprintf(stderr, "data-parallel: %d ranks, %ld pairs per step (global batch)\n", dist.world(),
                 long(p.options.batch));
  }
  if (lead && trainer.validation_pair_count() == 0) {
    std::fprintf(stderr, "note: no validation Dice: it needs labelled 'val' subjects and %s\n",
                 data.atlas ? "an atlas with labels" : "at least two of them (pairwise mode)");
  }
  double earlier_seconds = 0;  // training time before this run (resume)
  if (p.resume) {
    trainer.resume(checkpoint);
    if (lead) {
      earlier_seconds = cut_log_to(p.log, trainer.step());
      std::fprintf(stderr, "resumed from %s at step %ld\n", checkpoint.c_str(), long(trainer.step()));
    }
  }
  // Decoupled validation: a watcher process evaluates the checkpoints (rank 0 starts it).
  std::unique_ptr<ValidationProcess> watcher;
  if (lead && p.validation == "decoupled" && trainer.validation_pair_count() > 0) {
    ValidationRun v;
    v.out = p.out;
    v.manifest = p.manifest;
    v.cache = p.cache;
    v.similarity = p.options.similarity;
    v.device = p.options.device;
    v.size_multiple = p.size_multiple;
    v.max_unreadable = p.max_unreadable;
    v.seed = p.options.seed;
    v.threads = p.validation_threads;
    v.fresh = !p.resume;
    watcher = std::make_unique<ValidationProcess>(v);
  }
  TrainingLoop loop;
  loop.validation = watcher ? "decoupled" : p.validation == "inline" ? "inline" : "off";
  loop.evaluations = watcher ? watcher->results() : "";
  loop.log = p.log;
  loop.failures = p.failures;
  loop.checkpoint = checkpoint;
  loop.steps = p.options.steps;
  loop.earlier_seconds = earlier_seconds;
  loop.checkpoint_every = p.checkpoint_every;
  loop.validate_every = p.validate_every;
  const TrainingOutcome outcome = run_training(trainer, loop);
  double validation = outcome.validation_dice;
  if (!lead) return kOk;
  if (watcher) {
    // The watcher evaluates the last checkpoint, then ends: the model's Dice is its.
    const auto evaluated = watcher->finish();
    const parallel::EvaluatedStep* best = nullptr;
    for (const auto& e : evaluated) {
      if (e.best) best = &e;
      if (e.step == trainer.step()) validation = e.dice;
    }
    if (std::isfinite(validation)) std::fprintf(stderr, "validation Dice %.4f at step %ld\n", validation, long(trainer.step()));
    if (best) {
      std::fprintf(stderr, "best validation Dice %.4f at step %ld: %s.best.ckpt\n", best->dice, long(best->step),
                   p.out.c_str());
    }
  }
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  auto& notes = model.info.notes;
  notes["trained"] = date;
  notes["manifest"] = std::filesystem::path(p.manifest).filename().string();
  notes["mode"] = data.atlas ? "atlas" : "pairwise";
  notes["subjects"] = std::to_string(data.train.size()) + " train, " + std::to_string(data.validation.size()) + " validation";
  notes["steps"] = std::to_string(trainer.step());
  notes["similarity"] = p.options.similarity;
  notes["lambda"] = std::to_string(p.options.smoothness);
  if (p.options.objective) notes["objective"] = p.options.objective->to_string();
  notes["dice_weight"] = std::to_string(p.options.dice_weight);
  notes["synthetic_fraction"] = std::to_string(p.options.synthetic_fraction);
  if (p.options.feature_noise > 0) notes["feature_noise"] = std::to_string(p.options.feature_noise);
  notes["learning_rate"] = std::to_string(p.options.learning_rate);
  if (std::isfinite(validation)) notes["validation_dice"] = std::to_string(validation);
  notes["training_seconds"] = std::to_string(outcome.seconds);
  registration::save_model(p.out, model);
  std::fprintf(stderr, "wrote %s (%ld steps, %s this run)\n", p.out.c_str(), long(trainer.step()),
               duration(outcome.seconds_this_run).c_str());
  return kOk;
}

}  // namespace

int run_train(int argc, char** argv) {
  TCLAP::CmdLine cmd("Train a registration network on the subjects of a CSV manifest (image,labels,split; "
                     "split: train, val, test or atlas) and write a model file.", ' ', "0.1");
  TCLAP::ValueArg<std::string> manifest("", "manifest", "CSV manifest of the dataset", true, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> out("", "out", "the model file to write (.autoreg)", true, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> genotype("", "genotype", "AutoReg genotype file (12 operation names; default: 3³ convolutions everywhere)", false, "", "FILE", cmd);
  TCLAP::SwitchArg unet("", "unet", "train the VoxelMorph-style U-Net baseline instead", cmd, false);
  TCLAP::ValueArg<std::string> grid("", "grid", "model grid DxHxW at --spacing (default: the reference's foreground box + 8 mm)", false, "", "DxHxW", cmd);
  TCLAP::ValueArg<double> spacing("", "spacing", "model grid spacing in mm (default 2)", false, 2.0, "MM", cmd);
  TCLAP::ValueArg<int64_t> steps("", "steps", "training steps (one pair each; default 1000)", false, 1000, "N", cmd);
  TCLAP::ValueArg<int64_t> epochs("", "epochs", "instead of --steps: passes over the training subjects", false, 0, "E", cmd);
  TCLAP::ValueArg<double> lr("", "lr", "Adam learning rate (default 1e-4)", false, 1e-4, "R", cmd);
  std::vector<std::string> sims = {"ncc", "mse", "mind"};
  TCLAP::ValuesConstraint<std::string> sim_allowed(sims);
  TCLAP::ValueArg<std::string> similarity("", "similarity", "ncc (default, window 9), mse or mind", false, "ncc", &sim_allowed, cmd);
  TCLAP::ValueArg<double> max_spike("", "max-gradient-spike", "a gradient norm over this many times its running average is a fault: back to the last good state at half the learning rate (default 20; 0: off)", false, 20, "X", cmd);
  TCLAP::ValueArg<double> lambda("", "lambda", "weight of the smoothness term (default 1)", false, 1.0, "λ", cmd);
  TCLAP::ValueArg<std::string> objective("", "objective", "weights of the objective terms instead of --similarity and --lambda, e.g. a search's: ncc9=1,ncc7_half=0.5,ncc5_quarter=0.25,mind=0.1,smoothness=0.8 (missing terms 0)", false, "", "WEIGHTS", cmd);
  TCLAP::ValueArg<double> dice_weight("", "dice-weight", "weight of soft Dice on label maps (default 1; 0 = unsupervised)", false, 1.0, "W", cmd);
  TCLAP::ValueArg<double> synthetic("", "synthetic", "share of images synthesised from their label maps (the moving image, and in pairwise mode the fixed one too, each with this probability; default 0; subjects without an image always are)", false, 0.0, "F", cmd);
  TCLAP::ValueArg<double> feature_noise("", "feature-noise", "σ of random per-channel scale and shift noise after every operation in each training step (robustness to new scanners; the model gets feature transformation layers; default 0: none)", false, 0.0, "S", cmd);
  TCLAP::SwitchArg no_augment("", "no-augment", "no random deformations and intensity changes", cmd, false);
  TCLAP::SwitchArg plain("", "no-diffeomorphic", "predict displacements directly instead of integrating velocity fields", cmd, false);
  TCLAP::ValueArg<int64_t> checkpoint_every("", "checkpoint-every", "steps between checkpoints (default 100)", false, 100, "N", cmd);
  TCLAP::ValueArg<int64_t> validate_every("", "validate-every", "with --validation inline: steps between validations (default 100)", false, 100, "N", cmd);
  ModelRunArgs run(cmd, "JSON-lines training log");
  TCLAP::ValueArg<int64_t> batch("", "batch", "pairs per step over all ranks, the global batch (default: one per rank; resumed: the checkpoint's)", false, 1, "G", cmd);
  TCLAP::ValueArg<double> max_unreadable("", "max-unreadable", "share of manifest rows that may be unreadable (reported, skipped and listed in <out>.failures.jsonl; default 0: none)", false, 0, "F", cmd);
  std::vector<std::string> validations = {"decoupled", "inline", "off"};
  TCLAP::ValuesConstraint<std::string> validation_allowed(validations);
  TCLAP::ValueArg<std::string> validation("", "validation", "decoupled (default: a separate process evaluates each checkpoint, <out>.validation.jsonl, and keeps the best, <out>.best.ckpt), inline (every --validate-every steps; training waits) or off", false, "decoupled", &validation_allowed, cmd);
  TCLAP::ValueArg<int> validation_threads("", "validation-threads", "threads of the decoupled validation process (default 1)", false, 1, "T", cmd);
  TCLAP::SwitchArg sync_checkpoints("", "sync-checkpoints", "write checkpoints in the training thread, not in the background (to measure what that costs)", cmd, false);
  ScaleOutArgs scale(cmd);
  cmd.setExceptionHandling(false);
  cmd.parse(argc, argv);

  TrainParams p;
  p.manifest = manifest.getValue();
  p.out = out.getValue();
  p.cache = run.cache_for(p.out);
  p.log = run.log_for(p.out);
  p.failures = p.out + ".failures.jsonl";
  const std::string genotype_file = genotype.getValue();
  refuse_overwrite({&p.out, &p.log}, {&p.manifest, &genotype_file});
  if (p.out == p.log) throw UsageError("--log and --out name the same file");
  if (unet.getValue() && genotype.isSet()) throw UsageError("--genotype and --unet exclude each other");
  auto& n = p.info.network;
  n.kind = unet.getValue() ? "unet" : "autoreg";
  if (genotype.isSet()) n.genotype = read_genotype_option(genotype.getValue());
  n.diffeomorphic = !plain.getValue();
  if (!(spacing.getValue() > 0)) throw UsageError("--spacing must be > 0");
  p.info.spacing = {spacing.getValue(), spacing.getValue(), spacing.getValue()};
  p.info.grid = grid.isSet() ? parse_grid(grid.getValue()) : std::array<int64_t, 3>{0, 0, 0};
  p.size_multiple = unet.getValue() ? 16 : 4;  // the U-Net halves the grid four times, AutoReg twice
  for (int64_t size : p.info.grid) {
    if (size % p.size_multiple != 0) {
      throw UsageError("--grid: the " + p.info.network.kind + " network needs sizes that are multiples of " +
                       std::to_string(p.size_multiple));
    }
  }
  if (steps.getValue() <= 0 || epochs.getValue() < 0 || (epochs.isSet() && epochs.getValue() == 0)) {
    throw UsageError("--steps and --epochs must be positive");
  }
  if (steps.isSet() && epochs.isSet()) throw UsageError("--steps and --epochs exclude each other");
  if (!(lr.getValue() > 0)) throw UsageError("--lr must be > 0");
  if (lambda.getValue() < 0 || dice_weight.getValue() < 0) throw UsageError("--lambda and --dice-weight must be >= 0");
  if (synthetic.getValue() < 0 || synthetic.getValue() > 1) throw UsageError("--synthetic must be in [0, 1]");
  if (checkpoint_every.getValue() <= 0 || validate_every.getValue() <= 0) {
    throw UsageError("--checkpoint-every and --validate-every must be positive");
  }
  auto& o = p.options;
  o.steps = steps.getValue();
  p.epochs = epochs.getValue();
  o.learning_rate = lr.getValue();
  o.similarity = similarity.getValue();
  o.smoothness = lambda.getValue();
  if (max_spike.getValue() != 0 && !(max_spike.getValue() > 1)) throw UsageError("--max-gradient-spike must be > 1 (or 0: off)");
  o.spike_factor = max_spike.getValue();
  if (objective.isSet()) {
    if (similarity.isSet() || lambda.isSet()) throw UsageError("--objective replaces --similarity and --lambda");
    try {
      o.objective = registration::ObjectiveWeights::parse(objective.getValue());
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--objective: ") + e.what());
    }
  }
  o.dice_weight = dice_weight.getValue();
  o.synthetic_fraction = synthetic.getValue();
  o.augment = !no_augment.getValue();
  if (!(feature_noise.getValue() >= 0)) throw UsageError("--feature-noise must be >= 0");
  o.feature_noise = feature_noise.getValue();
  n.feature_transforms = o.feature_noise > 0;
  if (o.feature_noise > 0) o.trainable = "weights";  // γ and β stay the identity the noise perturbs
  o.seed = run.seed.getValue();
  o.device = run.device.value();
  p.checkpoint_every = checkpoint_every.getValue();
  p.validate_every = validate_every.getValue();
  p.resume = run.resume.getValue();
  if (batch.isSet() && batch.getValue() < 1) throw UsageError("--batch must be at least 1");
  p.batch_set = batch.isSet();
  o.async_checkpoints = !sync_checkpoints.getValue();
  p.validation = validation.getValue();
  if (validation_threads.getValue() < 1) throw UsageError("--validation-threads must be at least 1");
  p.validation_threads = validation_threads.getValue();
  if (!(max_unreadable.getValue() >= 0 && max_unreadable.getValue() < 1)) throw UsageError("--max-unreadable must be in [0, 1)");
  p.max_unreadable = max_unreadable.getValue();
  o.batch = batch.getValue();
  if (const auto code = supervise_if_asked(scale, argc, argv, "train", run.threads.value(), p.failures)) return *code;
  run.threads.apply();
  Distributed dist = join_if_distributed(scale, o.device);
  o.inject_nan_at = parallel::injected_non_finite_step(dist.rank());  // tests (parallel/worker.h)
  install_stop_handlers();
  try {
    return train(p, dist);
  } catch (const Interrupted&) {
    throw;
  } catch (const std::exception& e) {
    diagnose_own_failure(dist, e, exit_code(e), p.failures);
    throw;
  }
}

}  // namespace autoreg::apps
