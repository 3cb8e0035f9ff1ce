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
// failures are diagnosed in <out>.failures.jsonl. The job is pipeline::train
// (train_job.h); this file parses its settings.
#include <tclap/CmdLine.h>

#include <string>
#include <vector>

#include "autoreg/pipeline/train_job.h"
#include "autoreg/registration/similarity.h"
#include "autoreg/pipeline/run_loop.h"
#include "exit_codes.h"
#include "parse.h"
#include "options.h"
#include "run_args.h"
#include "scale_out.h"

namespace autoreg::apps {

int run_train(int argc, char** argv) {
  const pipeline::TrainSettings d;  // the defaults
  TCLAP::CmdLine cmd("Train a registration network on the subjects of a CSV manifest (image,labels,split; "
                     "split: train, val, test or atlas) and write a model file.", ' ', "0.1");
  TCLAP::ValueArg<std::string> manifest("", "manifest", "CSV manifest of the dataset", true, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> out("", "out", "the model file to write (.autoreg)", true, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> genotype("", "genotype", "AutoReg genotype file (12 operation names; default: 3³ convolutions everywhere)", false, "", "FILE", cmd);
  TCLAP::SwitchArg unet("", "unet", "train the VoxelMorph-style U-Net baseline instead", cmd, false);
  TCLAP::ValueArg<std::string> grid("", "grid", "model grid DxHxW at --spacing (default: the reference's foreground box + 8 mm)", false, "", "DxHxW", cmd);
  TCLAP::ValueArg<double> spacing("", "spacing", "model grid spacing in mm (default 2)", false, d.spacing, "MM", cmd);
  TCLAP::ValueArg<int64_t> steps("", "steps", "training steps (one pair each; default 1000)", false, d.steps, "N", cmd);
  TCLAP::ValueArg<int64_t> epochs("", "epochs", "instead of --steps: passes over the training subjects", false, 0, "E", cmd);
  TCLAP::ValueArg<double> lr("", "lr", "Adam learning rate (default 1e-4)", false, d.learning_rate, "R", cmd);
  Choices sims(registration::kSimilarityNames);
  TCLAP::ValueArg<std::string> similarity("", "similarity", "ncc (default, window 9), mse or mind", false, d.similarity, &sims.allowed, cmd);
  TCLAP::ValueArg<double> max_spike("", "max-gradient-spike", "a gradient norm over this many times its running average is a fault: back to the last good state at half the learning rate (default 20; 0: off)", false, d.max_gradient_spike, "X", cmd);
  TCLAP::ValueArg<double> lambda("", "lambda", "weight of the smoothness term (default 1)", false, d.lambda, "λ", cmd);
  TCLAP::ValueArg<std::string> objective("", "objective", "weights of the objective terms instead of --similarity and --lambda, e.g. a search's: ncc9=1,ncc7_half=0.5,ncc5_quarter=0.25,mind=0.1,smoothness=0.8 (missing terms 0)", false, "", "WEIGHTS", cmd);
  TCLAP::ValueArg<double> dice_weight("", "dice-weight", "weight of soft Dice on label maps (default 1; 0 = unsupervised)", false, d.dice_weight, "W", cmd);
  TCLAP::ValueArg<double> synthetic("", "synthetic", "share of images synthesised from their label maps (the moving image, and in pairwise mode the fixed one too, each with this probability; default 0; subjects without an image always are)", false, d.synthetic, "F", cmd);
  TCLAP::ValueArg<double> feature_noise("", "feature-noise", "σ of random per-channel scale and shift noise after every operation in each training step (robustness to new scanners; the model gets feature transformation layers; default 0: none)", false, d.feature_noise, "S", cmd);
  TCLAP::SwitchArg no_augment("", "no-augment", "no random deformations and intensity changes", cmd, false);
  TCLAP::SwitchArg plain("", "no-diffeomorphic", "predict displacements directly instead of integrating velocity fields", cmd, false);
  TCLAP::ValueArg<int64_t> checkpoint_every("", "checkpoint-every", "steps between checkpoints (default 100)", false, d.checkpoint_every, "N", cmd);
  TCLAP::ValueArg<int64_t> validate_every("", "validate-every", "with --validation inline: steps between validations (default 100)", false, d.validate_every, "N", cmd);
  ModelRunArgs run(cmd, "JSON-lines training log");
  TCLAP::ValueArg<int64_t> batch("", "batch", "pairs per step over all ranks, the global batch (default: one per rank; resumed: the checkpoint's)", false, 1, "G", cmd);
  TCLAP::ValueArg<double> max_unreadable("", "max-unreadable", "share of manifest rows that may be unreadable (reported, skipped and listed in <out>.failures.jsonl; default 0: none)", false, d.max_unreadable, "F", cmd);
  Choices validations(pipeline::kValidationNames);
  TCLAP::ValueArg<std::string> validation("", "validation", "decoupled (default: a separate process evaluates each checkpoint, <out>.validation.jsonl, and keeps the best, <out>.best.ckpt), inline (every --validate-every steps; training waits) or off", false, pipeline::to_string(d.validation), &validations.allowed, cmd);
  TCLAP::ValueArg<int> validation_threads("", "validation-threads", "threads of the decoupled validation process (default 1)", false, d.validation_threads, "T", cmd);
  TCLAP::SwitchArg sync_checkpoints("", "sync-checkpoints", "write checkpoints in the training thread, not in the background (to measure what that costs)", cmd, false);
  ScaleOutArgs scale(cmd);
  cmd.setExceptionHandling(false);
  parse(cmd, argc, argv);

  pipeline::TrainSettings s;
  s.manifest = manifest.getValue();
  s.out = out.getValue();
  s.run = run.settings();
  // What only a command line can say wrongly; the values are pipeline::validate's.
  if (steps.isSet() && epochs.isSet()) throw UsageError("--steps and --epochs exclude each other");
  if (epochs.isSet() && epochs.getValue() <= 0) throw UsageError("--steps and --epochs must be positive");
  if (objective.isSet() && (similarity.isSet() || lambda.isSet())) {
    throw UsageError("--objective replaces --similarity and --lambda");
  }
  s.genotype = genotype.getValue();
  s.unet = unet.getValue();
  s.diffeomorphic = !plain.getValue();
  s.spacing = spacing.getValue();
  if (grid.isSet()) s.grid = parse_grid(grid.getValue());
  s.steps = steps.getValue();
  s.epochs = epochs.getValue();
  s.learning_rate = lr.getValue();
  s.similarity = similarity.getValue();
  s.lambda = lambda.getValue();
  s.max_gradient_spike = max_spike.getValue();
  s.objective = objective.getValue();
  s.dice_weight = dice_weight.getValue();
  s.synthetic = synthetic.getValue();
  s.augment = !no_augment.getValue();
  s.feature_noise = feature_noise.getValue();
  s.checkpoint_every = checkpoint_every.getValue();
  s.validate_every = validate_every.getValue();
  if (batch.isSet()) s.batch = batch.getValue();
  s.sync_checkpoints = sync_checkpoints.getValue();
  s.validation = pipeline::parse_validation(validation.getValue());
  s.validation_threads = validation_threads.getValue();
  s.max_unreadable = max_unreadable.getValue();
  s.scale = scale.settings();
  if (s.scale.nproc == 0) run.threads.apply();  // a supervisor's ranks get theirs
  pipeline::install_stop_handlers();
  pipeline::train(s);
  return kOk;
}

}  // namespace autoreg::apps
