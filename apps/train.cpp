// autoreg train --manifest M --out model.autoreg [--genotype FILE | --unet]
//               [--grid DxHxW] [--spacing MM] [--steps N | --epochs E] [--learning-rate R]
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

#include <ATen/Parallel.h>

#include <string>
#include <vector>

#include "autoreg/runs/train_job.h"
#include "autoreg/registration/similarity.h"
#include "autoreg/runs/run_loop.h"
#include "exit_codes.h"
#include "parse.h"
#include "options.h"
#include "schema_args.h"

namespace autoreg::apps {

int run_train(int argc, char** argv) {
  const pipeline::TrainSettings defaults;
  TCLAP::CmdLine cmd("Train a registration network on the subjects of a CSV manifest (image,labels,split; "
                     "split: train, val, test or atlas) and write a model file.", ' ', "0.1");
  const SchemaArgs<pipeline::TrainSettings> options(cmd, pipeline::train_schema(), defaults);  // every option, from its row
  cmd.setExceptionHandling(false);
  parse(cmd, argc, argv);
  // What only a command line can say wrongly; the values are pipeline::validate's.
  if (options.given("steps") && options.given("epochs")) throw UsageError("--steps and --epochs exclude each other");
  if (options.given("objective") && (options.given("similarity") || options.given("lambda"))) {
    throw UsageError("--objective replaces --similarity and --lambda");
  }
  check_scale_out(options);
  const pipeline::TrainSettings s = options.settings(defaults);
  if (s.scale.nproc == 0 && s.run.threads > 0) at::set_num_threads(s.run.threads);  // a supervisor's ranks get theirs
  pipeline::install_stop_handlers();
  pipeline::train(s);
  return kOk;
}

}  // namespace autoreg::apps
