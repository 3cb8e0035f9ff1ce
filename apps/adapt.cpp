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
// fault guard, SIGINT/SIGTERM: as train.
#include <tclap/CmdLine.h>

#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>

#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>
#include <string>

#include "autoreg/io/manifest.h"
#include "autoreg/io/volume.h"
#include "autoreg/pipeline/dataset.h"
#include "autoreg/pipeline/default_model.h"
#include "autoreg/registration/model_file.h"
#include "autoreg/registration/train.h"
#include "exit_codes.h"
#include "options.h"
#include "run_args.h"
#include "run_log.h"
#include "training_loop.h"

namespace autoreg::apps {
namespace {

namespace fs = std::filesystem;

struct AdaptParams {
  std::string model, manifest, out, cache, log, method = "ftm";
  registration::TrainOptions options;
  bool lr_set = false, resume = false;
  int64_t checkpoint_every = 50, validate_every = 50;
};

// The base model's own objective: its searched weights, else its similarity and λ.
void take_objective(const registration::ModelInfo& info, registration::TrainOptions& o, const std::string& path) {
  const auto note = [&](const char* key) {
    const auto it = info.notes.find(key);
    return it == info.notes.end() ? std::string() : it->second;
  };
  try {
    if (!note("objective").empty()) o.objective = registration::ObjectiveWeights::parse(note("objective"));
    if (!note("similarity").empty()) o.similarity = note("similarity");
    if (!note("lambda").empty()) o.smoothness = std::stod(note("lambda"));
    if (!note("dice_weight").empty()) o.dice_weight = std::stod(note("dice_weight"));
  } catch (const std::exception& e) {
    throw io::IoError(path + ": its training notes do not give an objective (" + e.what() + ")");
  }
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec);
  return fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
}

// The best validated state so far: a model file beside the output, <out>.best (kept, so
// that a resumed or extended run compares with it as the uninterrupted run did).
struct Best {
  std::string path;
  int64_t step = 0;
  double dice = -1;
  void read() {
    if (!fs::exists(path)) return;
    const registration::Archive a = registration::read_archive(path, "MODEL");
    try {
      step = std::stoll(a.field("note.adapt_best_step", path));
      dice = std::stod(a.field("note.adapt_best_dice", path));
    } catch (const std::logic_error&) {
      throw registration::ModelFileError(path + ": malformed best step or Dice");
    }
  }
};

int adapt(AdaptParams p) {
  io::check_output(p.out);
  io::check_output(p.log);
  const std::string checkpoint = p.out + ".ckpt";
  if (p.resume && !fs::exists(checkpoint)) throw UsageError("--resume: no checkpoint " + checkpoint + " to resume from");

  registration::Model model = registration::load_model(p.model);
  const std::string base_checksum = registration::weights_checksum(*model.network);
  registration::TrainOptions& o = p.options;
  take_objective(model.info, o, p.model);
  if (p.method == "ftm") {
    registration::add_feature_transforms(model);  // identity; an adapted model's are kept
    o.trainable = "feature_transforms";
    if (!p.lr_set) o.learning_rate = 1e-3;
  } else {
    o.trainable = "all";
    if (!p.lr_set) o.learning_rate = 1e-4;
  }
  o.run_fields = {{"method", p.method}, {"base-model", base_checksum}};

  const io::Manifest manifest = io::read_manifest(p.manifest);
  for (const auto& row : manifest.rows) {
    if (row.split != "test" && row.image.empty()) {
      throw io::IoError(p.manifest + ":" + std::to_string(row.line) +
                        ": adaptation learns from the new domain's images; this row has none");
    }
  }
  pipeline::DatasetOptions dataset;
  dataset.cache_dir = p.cache;
  dataset.one_subject_pairs = true;
  dataset.affine.similarity = o.objective && o.objective->lambda[registration::kMind] > 0 ? "mind" : o.similarity;
  dataset.progress = [](const std::string& line) { std::fprintf(stderr, "preprocess: %s\n", line.c_str()); };
  registration::ModelInfo grid = model.info;  // the model's grid, spacing, orientation: fixed
  registration::TrainingSet data;
  const bool cache_existed = fs::exists(p.cache);
  try {
    try {
      data = pipeline::load_training_set(manifest, grid, model.network->size_multiple(), dataset);
    } catch (const std::invalid_argument& e) {
      throw io::IoError(e.what());  // names the manifest
    }
  } catch (...) {
    std::error_code ec;
    if (!cache_existed) fs::remove_all(p.cache, ec);  // bad input leaves nothing behind
    throw;
  }
  const size_t subjects = data.train.size();
  std::fprintf(stderr, "adapting %s (%s) to %zu subject%s (%s), %zu validation subject%s; %s\n",
               p.model.c_str(), p.method.c_str(), subjects, subjects == 1 ? "" : "s",
               data.atlas ? "atlas mode" : subjects == 1 ? "paired with deformed copies of itself" : "pairwise",
               data.validation.size(), data.validation.size() == 1 ? "" : "s",
               o.objective ? ("objective " + o.objective->to_string()).c_str() : ("similarity " + o.similarity).c_str());

  at::manual_seed(o.seed);
  std::unique_ptr<registration::Trainer> made;
  try {
    made = std::make_unique<registration::Trainer>(model, data, o);
  } catch (const std::invalid_argument& e) {
    throw io::IoError(p.manifest + ": " + e.what());
  }
  registration::Trainer& trainer = *made;
  int64_t parameters = 0;
  for (const at::Tensor& t : p.method == "ftm" ? model.network->feature_transform_parameters() : model.network->parameters()) {
    parameters += t.numel();
  }
  std::fprintf(stderr, "training %ld parameters\n", long(parameters));

  Best best{p.out + ".best"};
  double earlier_seconds = 0;
  if (p.resume) {
    trainer.resume(checkpoint);
    earlier_seconds = cut_log_to(p.log, trainer.step());
    best.read();
    std::fprintf(stderr, "resumed from %s at step %ld\n", checkpoint.c_str(), long(trainer.step()));
  } else {
    std::error_code ec;
    fs::remove(best.path, ec);  // a fresh run's best is its own
  }
  const auto on_validated = [&](int64_t step, double dice) {
    if (!(dice > best.dice)) return;
    best.step = step;
    best.dice = dice;
    registration::Model snapshot = model;
    snapshot.info.notes["adapt_best_step"] = std::to_string(step);
    snapshot.info.notes["adapt_best_dice"] = std::to_string(dice);
    registration::save_model(best.path, snapshot);
  };
  if (trainer.step() == 0 && trainer.validation_pair_count() > 0) {
    // The model as it comes is a candidate too: adaptation that does not help is not kept.
    const double dice = trainer.validate();
    std::fprintf(stderr, "validation Dice before adaptation %.4f\n", dice);
    on_validated(0, dice);
  }
  TrainingLoop loop;
  loop.label = "adapt";
  loop.log = p.log;
  loop.checkpoint = checkpoint;
  loop.steps = o.steps;
  loop.earlier_seconds = earlier_seconds;
  loop.checkpoint_every = p.checkpoint_every;
  loop.validate_every = p.validate_every;
  loop.validation = trainer.validation_pair_count() > 0 ? "inline" : "off";
  loop.on_validated = on_validated;
  if (loop.validation == "off") {
    std::fprintf(stderr, "note: no validation: the last step is kept (labelled 'val' rows, two or more, pick the best)\n");
  }
  const TrainingOutcome outcome = run_training(trainer, loop);

  registration::Model result = model;
  if (best.dice >= 0) {
    result = registration::load_model(best.path);
    std::fprintf(stderr, "best validation Dice %.4f at step %ld (of %ld)\n", best.dice, long(best.step),
                 long(trainer.step()));
  }
  result.network->to(at::kCPU);
  if (p.method == "ftm" && registration::weights_checksum(*result.network) != base_checksum) {
    throw std::logic_error("ftm adaptation changed the network's weights");  // a bug, never bad input
  }
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  auto& notes = result.info.notes;
  notes.erase("adapt_best_step");
  notes.erase("adapt_best_dice");
  notes["adapted"] = date;
  notes["adapted_from"] = fs::path(p.model).filename().string();
  notes["adapted_from_weights"] = base_checksum;
  notes["adapt_method"] = p.method;
  notes["adapt_manifest"] = fs::path(p.manifest).filename().string();
  notes["adapt_subjects"] = std::to_string(subjects);
  notes["adapt_steps"] = std::to_string(best.dice >= 0 ? best.step : trainer.step());
  notes["adapt_steps_run"] = std::to_string(trainer.step());
  notes["adapt_parameters"] = std::to_string(parameters);
  notes["adapt_learning_rate"] = std::to_string(o.learning_rate);
  notes["adapt_seconds"] = std::to_string(outcome.seconds);
  if (best.dice >= 0) notes["adapt_validation_dice"] = std::to_string(best.dice);
  registration::save_model(p.out, result);
  std::fprintf(stderr, "wrote %s (%s, %ld steps, %s this run)\n", p.out.c_str(), p.method.c_str(),
               long(trainer.step()), duration(outcome.seconds_this_run).c_str());
  return kOk;
}

}  // namespace

int run_adapt(int argc, char** argv) {
  TCLAP::CmdLine cmd("Adapt a trained model to a new scanner or contrast from a few unlabelled scans of it "
                     "(CSV manifest: image,labels,split; train rows adapt, labelled val rows pick the best step) "
                     "and write the adapted model file.", ' ', "0.1");
  TCLAP::ValueArg<std::string> model("", "model", "the model to adapt (.autoreg), or 'default'", true, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> manifest("", "manifest", "CSV manifest of the new domain's scans", true, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> out("", "out", "the adapted model file to write (.autoreg)", true, "", "FILE", cmd);
  std::vector<std::string> methods = {"ftm", "finetune"};
  TCLAP::ValuesConstraint<std::string> method_allowed(methods);
  TCLAP::ValueArg<std::string> method("", "method", "ftm (default: a scale and a shift per channel after every operation, the weights frozen) or finetune (every weight)", false, "ftm", &method_allowed, cmd);
  TCLAP::ValueArg<int64_t> steps("", "steps", "adaptation steps, one pair each (default 200)", false, 200, "N", cmd);
  TCLAP::ValueArg<double> lr("", "lr", "Adam learning rate (default 1e-3 for ftm, 1e-4 for finetune)", false, 1e-3, "R", cmd);
  TCLAP::ValueArg<int64_t> checkpoint_every("", "checkpoint-every", "steps between checkpoints (default 50)", false, 50, "N", cmd);
  TCLAP::ValueArg<int64_t> validate_every("", "validate-every", "steps between validations, with labelled val rows (default 50)", false, 50, "N", cmd);
  ModelRunArgs run(cmd, "JSON-lines log");
  cmd.setExceptionHandling(false);
  cmd.parse(argc, argv);

  AdaptParams p;
  p.model = pipeline::resolve_model_name(model.getValue());
  p.manifest = manifest.getValue();
  p.out = out.getValue();
  p.cache = run.cache_for(p.out);
  p.log = run.log_for(p.out);
  p.method = method.getValue();
  const std::string best = p.out + ".best", checkpoint = p.out + ".ckpt";
  refuse_overwrite({&p.out, &p.log, &best, &checkpoint}, {&p.manifest, &p.model});
  for (const std::string* written : {static_cast<const std::string*>(&p.out), &best, &checkpoint}) {
    if (same_file(*written, p.model)) throw UsageError(*written + " (of --out) is the model being adapted; refusing to overwrite it");
  }
  if (p.out == p.log) throw UsageError("--log and --out name the same file");
  if (steps.getValue() < 1) throw UsageError("--steps must be at least 1");
  if (!(lr.getValue() > 0)) throw UsageError("--lr must be > 0");
  if (checkpoint_every.getValue() <= 0 || validate_every.getValue() <= 0) {
    throw UsageError("--checkpoint-every and --validate-every must be positive");
  }
  p.options.steps = steps.getValue();
  p.options.learning_rate = lr.getValue();
  p.lr_set = lr.isSet();
  p.options.device = run.device.value();
  p.options.seed = run.seed.getValue();
  p.checkpoint_every = checkpoint_every.getValue();
  p.validate_every = validate_every.getValue();
  p.resume = run.resume.getValue();
  run.threads.apply();
  install_stop_handlers();
  return adapt(p);
}

}  // namespace autoreg::apps
