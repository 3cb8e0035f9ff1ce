// autoreg adapt --model M|default --manifest target.csv --out adapted.autoreg
//               [--method ftm|finetune] [--steps N] [--lr R] [--validate-every N]
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
// fault guard, SIGINT/SIGTERM: as train. The job is pipeline::adapt (adapt_job.h); this
// file parses its settings.
#include <tclap/CmdLine.h>

#include <string>
#include <vector>

#include "autoreg/pipeline/adapt_job.h"
#include "autoreg/pipeline/run_loop.h"
#include "exit_codes.h"
#include "parse.h"
#include "run_args.h"

namespace autoreg::apps {

int run_adapt(int argc, char** argv) {
  const pipeline::AdaptSettings d;  // the defaults
  TCLAP::CmdLine cmd("Adapt a trained model to a new scanner or contrast from a few unlabelled scans of it "
                     "(CSV manifest: image,labels,split; train rows adapt, labelled val rows pick the best step) "
                     "and write the adapted model file.", ' ', "0.1");
  TCLAP::ValueArg<std::string> model("", "model", "the model to adapt (.autoreg), or 'default'", true, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> manifest("", "manifest", "CSV manifest of the new domain's scans", true, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> out("", "out", "the adapted model file to write (.autoreg)", true, "", "FILE", cmd);
  Choices methods(pipeline::kAdaptMethodNames);
  TCLAP::ValueArg<std::string> method("", "method", "ftm (default: a scale and a shift per channel after every operation, the weights frozen) or finetune (every weight)", false, pipeline::to_string(d.method), &methods.allowed, cmd);
  TCLAP::ValueArg<int64_t> steps("", "steps", "adaptation steps, one pair each (default 200)", false, d.steps, "N", cmd);
  TCLAP::ValueArg<double> lr("", "lr", "Adam learning rate (default 1e-3 for ftm, 1e-4 for finetune)", false, 1e-3, "R", cmd);
  TCLAP::ValueArg<int64_t> checkpoint_every("", "checkpoint-every", "steps between checkpoints (default 50)", false, d.checkpoint_every, "N", cmd);
  TCLAP::ValueArg<int64_t> validate_every("", "validate-every", "steps between validations, with labelled val rows (default 50)", false, d.validate_every, "N", cmd);
  ModelRunArgs run(cmd, "JSON-lines log");
  cmd.setExceptionHandling(false);
  parse(cmd, argc, argv);

  pipeline::AdaptSettings s;
  s.model = model.getValue();
  s.manifest = manifest.getValue();
  s.out = out.getValue();
  s.method = pipeline::parse_adapt_method(method.getValue());
  s.steps = steps.getValue();
  if (lr.isSet()) s.learning_rate = lr.getValue();
  s.checkpoint_every = checkpoint_every.getValue();
  s.validate_every = validate_every.getValue();
  s.run = run.settings();
  run.threads.apply();
  pipeline::install_stop_handlers();
  pipeline::adapt(s);
  return kOk;
}

}  // namespace autoreg::apps
