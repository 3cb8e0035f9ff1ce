// Training a registration network on a manifest's subjects, the library's side of
// `autoreg train` (docs/training.md): one settings struct with its defaults, validated in
// one place, written back as the command line that parses into it, and the job itself.
//
// The job preprocesses the subjects onto the model grid (cached), trains, writes a
// checkpoint (<out>.ckpt) every checkpoint_every steps and the model at the end; one
// JSON line per step goes to the log and a progress line to stderr. When the
// environment names a rank (torchrun, srun, the --nproc supervisor), the ranks train
// data-parallel: rank 0 alone preprocesses, logs, checkpoints and writes the model;
// failures are diagnosed in <out>.failures.jsonl. SIGINT/SIGTERM (after
// install_stop_handlers, run_loop.h) write a checkpoint and end it with
// base::Interrupted.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "autoreg/parallel/ranks.h"
#include "autoreg/runs/run_settings.h"

namespace autoreg::pipeline {

struct TrainSettings {
  std::string manifest;                 // CSV: image,labels,split
  std::string out;                      // the model file (.autoreg)
  std::string genotype;                 // AutoReg genotype file; "": 3³ convolutions everywhere
  bool unet = false;                    // the VoxelMorph-style U-Net instead
  std::array<int64_t, 3> grid{0, 0, 0}; // model grid DxHxW; 0s: the reference's foreground box + 8 mm
  double spacing = 2;                   // mm
  int64_t steps = 1000;
  int64_t epochs = 0;                   // > 0: instead of steps, passes over the training subjects
  double learning_rate = 1e-4;
  std::string similarity = "ncc";       // ncc | mse | mind
  double lambda = 1;                    // smoothness weight
  std::string objective;                // weights of the objective terms instead of similarity and lambda
  double dice_weight = 1;
  double synthetic = 0;                 // share of images synthesised from label maps
  double feature_noise = 0;             // σ of per-channel noise (adds feature transformation layers)
  double max_gradient_spike = 20;       // 0: off
  bool augment = true, diffeomorphic = true;
  int64_t checkpoint_every = 100, validate_every = 100;
  ModelRunSettings run;
  std::optional<int64_t> batch;         // global batch; none: one pair per rank (resumed: the checkpoint's)
  double max_unreadable = 0;            // share of manifest rows that may be unreadable
  Validation validation = Validation::Decoupled;
  int validation_threads = 1;
  bool sync_checkpoints = false;        // checkpoints in the training thread
  parallel::ScaleOut scale;             // nproc is the command line's (the supervisor); the ranks read the rest
  std::string executable;               // the autoreg command for the validation watcher; "": executable.h
};

// A base::UsageError naming the option when a value cannot train.
void validate(const TrainSettings& s);

// The settings' rows (base/schema.h): the command line's options are made from them, and
// to_arguments writes them back.
const base::Schema<TrainSettings>& train_schema();

// `train` and the options that parse back into `s` (without --nproc and --max-restarts:
// a supervisor's ranks run this).
std::vector<std::string> to_arguments(const TrainSettings& s);

struct TrainResult {
  std::string model;               // written by rank 0
  int64_t steps = 0;
  double validation_dice = std::numeric_limits<double>::quiet_NaN();  // of the model's step; NaN: not validated
  double seconds = 0;              // training time of all runs
  bool lead = true;                // this process is rank 0 (the others write nothing)
};

// Trains (as one rank of many when the environment says so). Errors: base::UsageError,
// io::IoError for bad input, base::Interrupted after a stop.
TrainResult train(const TrainSettings& s);

}  // namespace autoreg::pipeline
