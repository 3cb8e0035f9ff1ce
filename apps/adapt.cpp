// autoreg adapt --model M|default --manifest target.csv --out adapted.autoreg
//               [--method ftm|finetune] [--steps N] [--learning-rate R] [--validate-every N]
//               [--checkpoint-every N] [--cache DIR] [--log FILE] [--threads T]
//               [--device cpu|cuda] [--seed S] [--resume]
//
// Adapts a trained model to a new scanner, sequence or site from a few of its scans,
// without labels: the model's own objective (its searched λ, similarity and smoothness;
// soft Dice too where the manifest gives label maps) on pairs of the manifest's `train`
// subjects (K subjects: K·(K−1) ordered pairs; one subject: pairs of it with deformed
// copies of itself), with train's augmentation. ftm (the default) trains the feature-wise
// transformations alone (feature_transform.h: a scale and a shift per channel after every
// operation; the weights frozen); finetune trains every weight, for comparison. `val`
// rows with label maps pick the best step (validated every N steps). Progress line,
// JSON-lines log (<out>.log.jsonl), checkpoints (<out>.ckpt) and exact --resume, the
// fault guard, SIGINT/SIGTERM: as train. The job is pipeline::adapt (adapt_job.h); its
// options are made from the settings' rows (adapt_schema()).
#include <tclap/CmdLine.h>

#include <ATen/Parallel.h>

#include <string>
#include <vector>

#include "autoreg/runs/adapt_job.h"
#include "autoreg/runs/run_loop.h"
#include "exit_codes.h"
#include "parse.h"
#include "schema_args.h"

namespace autoreg::apps {

int run_adapt(int argc, char** argv) {
  const pipeline::AdaptSettings defaults;
  TCLAP::CmdLine cmd("Adapt a trained model to a new scanner or contrast from a few unlabelled scans of it "
                     "(CSV manifest: image,labels,split; train rows adapt, labelled val rows pick the best step) "
                     "and write the adapted model file.", ' ', "0.1");
  const SchemaArgs<pipeline::AdaptSettings> options(cmd, pipeline::adapt_schema(), defaults);  // every option, from its row
  cmd.setExceptionHandling(false);
  parse(cmd, argc, argv);
  const pipeline::AdaptSettings s = options.settings(defaults);
  if (s.run.threads > 0) at::set_num_threads(s.run.threads);
  pipeline::install_stop_handlers();
  pipeline::adapt(s);
  return kOk;
}

}  // namespace autoreg::apps
