// autoreg train --manifest M --out model.autoreg [--genotype FILE | --unet]
//               [--grid DxHxW] [--spacing MM] [--steps N | --epochs E] [--lr R]
//               [--similarity ncc|mse|mind] [--lambda λ] [--objective WEIGHTS] [--dice-weight W]
//               [--synthetic F] [--no-augment] [--checkpoint-every N] [--validate-every N]
//               [--cache DIR] [--log FILE] [--device cpu|cuda] [--threads T] [--seed S] [--resume]
//
// Preprocesses the manifest's subjects onto the model grid (cached), trains the network,
// writes a checkpoint (<out>.ckpt) every N steps and the model at the end. A progress
// line goes to stderr, one JSON line per step to the log (<out>.log.jsonl). --resume
// continues from the checkpoint and cuts the log back to it. SIGINT/SIGTERM write a
// checkpoint and exit with 4.
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
#include "options.h"
#include "run_log.h"
#include "training_loop.h"

namespace autoreg::apps {
namespace {

struct TrainParams {
  std::string manifest, out, cache, log;
  registration::ModelInfo info;
  registration::TrainOptions options;
  int64_t epochs = 0;  // > 0: steps = epochs × training subjects
  int64_t size_multiple = 4;  // what the network needs of the grid's sizes
  int64_t checkpoint_every = 100, validate_every = 100;
  bool resume = false;
};

int train(TrainParams p) {
  io::check_output(p.out);
  io::check_output(p.log);
  const std::string checkpoint = p.out + ".ckpt";
  if (p.resume && !std::filesystem::exists(checkpoint)) {
    throw UsageError("--resume: no checkpoint " + checkpoint + " to resume from");
  }
  const io::Manifest manifest = io::read_manifest(p.manifest);
  pipeline::DatasetOptions dataset;
  dataset.cache_dir = p.cache;
  dataset.affine.similarity = p.options.similarity;  // mind: mutual information, as in register
  dataset.progress = [](const std::string& line) { std::fprintf(stderr, "preprocess: %s\n", line.c_str()); };
  registration::TrainingSet data;
  try {
    data = pipeline::load_training_set(manifest, p.info, p.size_multiple, dataset);
  } catch (const std::invalid_argument& e) {
    throw io::IoError(e.what());  // a manifest that cannot train: bad input
  }
  std::fprintf(stderr, "training set: %zu training, %zu validation subjects%s; model grid %ldx%ldx%ld at %g mm\n",
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
  if (trainer.validation_pair_count() == 0) {
    std::fprintf(stderr, "note: no validation Dice: it needs labelled 'val' subjects and %s\n",
                 data.atlas ? "an atlas with labels" : "at least two of them (pairwise mode)");
  }
  double earlier_seconds = 0;  // training time before this run (resume)
  if (p.resume) {
    trainer.resume(checkpoint);
    earlier_seconds = cut_log_to(p.log, trainer.step());
    std::fprintf(stderr, "resumed from %s at step %ld\n", checkpoint.c_str(), long(trainer.step()));
  }
  TrainingLoop loop;
  loop.log = p.log;
  loop.checkpoint = checkpoint;
  loop.steps = p.options.steps;
  loop.earlier_seconds = earlier_seconds;
  loop.checkpoint_every = p.checkpoint_every;
  loop.validate_every = p.validate_every;
  const TrainingOutcome outcome = run_training(trainer, loop);
  const double validation = outcome.validation_dice;
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
  TCLAP::SwitchArg no_augment("", "no-augment", "no random deformations and intensity changes", cmd, false);
  TCLAP::SwitchArg plain("", "no-diffeomorphic", "predict displacements directly instead of integrating velocity fields", cmd, false);
  TCLAP::ValueArg<int64_t> checkpoint_every("", "checkpoint-every", "steps between checkpoints (default 100)", false, 100, "N", cmd);
  TCLAP::ValueArg<int64_t> validate_every("", "validate-every", "steps between validations (default 100)", false, 100, "N", cmd);
  TCLAP::ValueArg<std::string> cache("", "cache", "folder for preprocessed volumes (default <out>.cache)", false, "", "DIR", cmd);
  TCLAP::ValueArg<std::string> log("", "log", "JSON-lines training log (default <out>.log.jsonl)", false, "", "FILE", cmd);
  std::vector<std::string> devices = {"cpu", "cuda"};
  TCLAP::ValuesConstraint<std::string> device_allowed(devices);
  TCLAP::ValueArg<std::string> device("", "device", "cpu (default) or cuda", false, "cpu", &device_allowed, cmd);
  TCLAP::ValueArg<int> threads("", "threads", "CPU threads (default: all)", false, 0, "T", cmd);
  TCLAP::ValueArg<uint64_t> seed("", "seed", "random seed (default 0)", false, 0, "S", cmd);
  TCLAP::SwitchArg resume("", "resume", "continue from <out>.ckpt (same options)", cmd, false);
  cmd.setExceptionHandling(false);
  cmd.parse(argc, argv);

  TrainParams p;
  p.manifest = manifest.getValue();
  p.out = out.getValue();
  p.cache = cache.isSet() ? cache.getValue() : p.out + ".cache";
  p.log = log.isSet() ? log.getValue() : p.out + ".log.jsonl";
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
  o.seed = seed.getValue();
  o.device = device.getValue();
  p.checkpoint_every = checkpoint_every.getValue();
  p.validate_every = validate_every.getValue();
  p.resume = resume.getValue();
  if (threads.getValue() > 0) at::set_num_threads(threads.getValue());
  install_stop_handlers();
  return train(p);
}

}  // namespace autoreg::apps
