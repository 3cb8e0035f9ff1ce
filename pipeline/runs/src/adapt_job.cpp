#include "autoreg/runs/adapt_job.h"

#include <ATen/ATen.h>

#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>
#include <string>

#include "long_run.h"
#include "autoreg/base/errors.h"
#include "autoreg/io/manifest.h"
#include "autoreg/io/volume.h"
#include "autoreg/runs/dataset.h"
#include "autoreg/pair/default_model.h"
#include "autoreg/pair/output_files.h"
#include "autoreg/runs/run_log.h"
#include "autoreg/runs/run_loop.h"
#include "autoreg/registration/model_file.h"
#include "autoreg/registration/train.h"

namespace autoreg::pipeline {
namespace {

namespace fs = std::filesystem;
using base::UsageError;

// The job's files: the model to adapt (resolved), its inputs and outputs.
struct Paths {
  std::string model, manifest, out, cache, log, checkpoint, best;
};

Paths paths(const AdaptSettings& s) {
  return {resolve_model_name(s.model), s.manifest, s.out, s.run.cache_for(s.out), s.run.log_for(s.out),
          s.out + ".ckpt", s.out + ".best"};
}

// The base model's own objective: its searched weights, else its similarity and λ.
void take_objective(const registration::ModelInfo& info, registration::TrainOptions& o, const std::string& path) {
  const auto note = [&](const char* key) {
    const auto it = info.notes.find(key);
    return it == info.notes.end() ? std::string() : it->second;
  };
  try {
    if (!note("objective").empty()) o.objective = registration::ObjectiveWeights::parse(note("objective"));
    if (!note("similarity").empty()) o.similarity = registration::parse_similarity(note("similarity"));
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

// The trainer's options: the base model's own objective, the method's parameters and
// learning rate.
registration::TrainOptions adapt_options(const AdaptSettings& s, registration::Model& model, const Paths& p,
                                         const std::string& base_checksum) {
  registration::TrainOptions o;
  o.steps = s.steps;
  o.device = s.run.device;
  o.seed = s.run.seed;
  take_objective(model.info, o, p.model);
  if (s.method == AdaptMethod::Ftm) {
    registration::add_feature_transforms(model);  // identity; an adapted model's are kept
    o.trainable = registration::Trainable::FeatureTransforms;
    o.learning_rate = s.learning_rate.value_or(1e-3);
  } else {
    o.trainable = registration::Trainable::All;
    o.learning_rate = s.learning_rate.value_or(1e-4);
  }
  o.run_fields = {{"method", to_string(s.method)}, {"base-model", base_checksum}};
  return o;
}

// The new domain's scans on the model's own grid (fixed: its grid, spacing, orientation).
registration::TrainingSet adapt_data(const Paths& p, const registration::Model& model,
                                     const registration::TrainOptions& o) {
  const io::Manifest manifest = io::read_manifest(p.manifest);
  for (const auto& row : manifest.rows) {
    if (row.split != "test" && row.image.empty()) {
      throw io::IoError(p.manifest + ":" + std::to_string(row.line) +
                        ": adaptation learns from the new domain's images; this row has none");
    }
  }
  DatasetOptions dataset;
  dataset.cache_dir = p.cache;
  dataset.one_subject_pairs = true;
  dataset.affine.similarity =
      o.objective && o.objective->lambda[registration::kMind] > 0 ? registration::Similarity::Mind : o.similarity;
  dataset.progress = [](const std::string& line) { std::fprintf(stderr, "preprocess: %s\n", line.c_str()); };
  registration::ModelInfo grid = model.info;
  const bool cache_existed = fs::exists(p.cache);
  try {
    try {
      return load_training_set(manifest, grid, model.network->size_multiple(), dataset);
    } catch (const std::invalid_argument& e) {
      throw io::IoError(e.what());  // names the manifest
    }
  } catch (...) {
    std::error_code ec;
    if (!cache_existed) fs::remove_all(p.cache, ec);  // bad input leaves nothing behind
    throw;
  }
}

// What the adapted model's notes say of its adaptation.
struct Adapted {
  std::string base_checksum;
  size_t subjects = 0;
  int64_t steps_run = 0, parameters = 0;
  double learning_rate = 0, seconds = 0;
};

void note_adaptation(registration::ModelInfo& info, const AdaptSettings& s, const Paths& p, const Best& best,
                     const Adapted& a) {
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  auto& notes = info.notes;
  notes.erase("adapt_best_step");
  notes.erase("adapt_best_dice");
  notes["adapted"] = date;
  notes["adapted_from"] = fs::path(p.model).filename().string();
  notes["adapted_from_weights"] = a.base_checksum;
  notes["adapt_method"] = to_string(s.method);
  notes["adapt_manifest"] = fs::path(p.manifest).filename().string();
  notes["adapt_subjects"] = std::to_string(a.subjects);
  notes["adapt_steps"] = std::to_string(best.dice >= 0 ? best.step : a.steps_run);
  notes["adapt_steps_run"] = std::to_string(a.steps_run);
  notes["adapt_parameters"] = std::to_string(a.parameters);
  notes["adapt_learning_rate"] = std::to_string(a.learning_rate);
  notes["adapt_seconds"] = std::to_string(a.seconds);
  if (best.dice >= 0) notes["adapt_validation_dice"] = std::to_string(best.dice);
}

void adapt_job(const AdaptSettings& s) {
  const Paths p = paths(s);
  io::check_output(p.out);
  io::check_output(p.log);
  const std::string& checkpoint = p.checkpoint;
  if (s.run.resume && !fs::exists(checkpoint)) throw UsageError("--resume: no checkpoint " + checkpoint + " to resume from");

  registration::Model model = registration::load_model(p.model);
  Adapted adapted;
  adapted.base_checksum = registration::weights_checksum(*model.network);
  const registration::TrainOptions o = adapt_options(s, model, p, adapted.base_checksum);
  const registration::TrainingSet data = adapt_data(p, model, o);
  adapted.subjects = data.train.size();
  std::fprintf(stderr, "adapting %s (%s) to %zu subject%s (%s), %zu validation subject%s; %s\n",
               p.model.c_str(), to_string(s.method), adapted.subjects, adapted.subjects == 1 ? "" : "s",
               data.atlas ? "atlas mode" : adapted.subjects == 1 ? "paired with deformed copies of itself" : "pairwise",
               data.validation.size(), data.validation.size() == 1 ? "" : "s",
               o.objective ? ("objective " + o.objective->to_string()).c_str() : (std::string("similarity ") + registration::similarity_name(o.similarity)).c_str());

  at::manual_seed(o.seed);
  const std::unique_ptr<registration::Trainer> made = detail::make_trainer(model, data, o, p.manifest);
  registration::Trainer& trainer = *made;
  for (const at::Tensor& t : s.method == AdaptMethod::Ftm ? model.network->feature_transform_parameters() : model.network->parameters()) {
    adapted.parameters += t.numel();
  }
  std::fprintf(stderr, "training %ld parameters\n", long(adapted.parameters));

  Best best{p.best};
  RunLoop loop;
  if (s.run.resume) {
    trainer.resume(checkpoint);
    loop.earlier_seconds = cut_log_to(p.log, trainer.steps_done());
    best.read();
    std::fprintf(stderr, "resumed from %s at step %ld\n", checkpoint.c_str(), long(trainer.steps_done()));
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
  if (trainer.steps_done() == 0 && trainer.validation_pair_count() > 0) {
    // The model as it comes is a candidate too: adaptation that does not help is not kept.
    const double dice = trainer.validate();
    std::fprintf(stderr, "validation Dice before adaptation %.4f\n", dice);
    on_validated(0, dice);
  }
  loop.label = "adapt";
  loop.log = p.log;
  loop.checkpoint = checkpoint;
  loop.steps = o.steps;
  loop.checkpoint_every = s.checkpoint_every;
  loop.validate_every = s.validate_every;
  loop.validation = trainer.validation_pair_count() > 0 ? Validation::Inline : Validation::Off;
  loop.on_validated = on_validated;
  if (loop.validation == Validation::Off) {
    std::fprintf(stderr, "note: no validation: the last step is kept (labelled 'val' rows, two or more, pick the best)\n");
  }
  const RunOutcome outcome = run_training(trainer, loop);

  registration::Model result = model;
  if (best.dice >= 0) {
    result = registration::load_model(best.path);
    std::fprintf(stderr, "best validation Dice %.4f at step %ld (of %ld)\n", best.dice, long(best.step),
                 long(trainer.steps_done()));
  }
  result.network->to(at::kCPU);
  if (s.method == AdaptMethod::Ftm && registration::weights_checksum(*result.network) != adapted.base_checksum) {
    throw std::logic_error("ftm adaptation changed the network's weights");  // a bug, never bad input
  }
  adapted.steps_run = trainer.steps_done();
  adapted.learning_rate = o.learning_rate;
  adapted.seconds = outcome.seconds;
  note_adaptation(result.info, s, p, best, adapted);
  registration::save_model(p.out, result);
  std::fprintf(stderr, "wrote %s (%s, %ld steps, %s this run)\n", p.out.c_str(), to_string(s.method),
               long(trainer.steps_done()), duration(outcome.seconds_this_run).c_str());
}

}  // namespace

void validate(const AdaptSettings& s) {
  const Paths p = paths(s);
  refuse_overwrite({&p.out, &p.log, &p.best, &p.checkpoint}, {&p.manifest, &p.model});
  for (const std::string* written : {&p.out, &p.best, &p.checkpoint}) {
    if (same_file(*written, p.model)) throw UsageError(*written + " (of --out) is the model being adapted; refusing to overwrite it");
  }
  if (p.out == p.log) throw UsageError("--log and --out name the same file");
  if (s.steps < 1) throw UsageError("--steps must be at least 1");
  if (s.learning_rate && !(*s.learning_rate > 0)) throw UsageError("--learning-rate must be > 0");
  if (s.checkpoint_every <= 0 || s.validate_every <= 0) {
    throw UsageError("--checkpoint-every and --validate-every must be positive");
  }
}

const base::Schema<AdaptSettings>& adapt_schema() {
  using S = AdaptSettings;
  static const base::Schema<S> schema = [] {
    base::Schema<S> rows{
        base::text_field<S>("model", "model", "FILE", "the model to adapt (.autoreg), or 'default'", &S::model, true),
        base::text_field<S>("manifest", "manifest", "FILE", "CSV manifest of the new domain's scans", &S::manifest, true),
        base::text_field<S>("out", "out", "FILE", "the adapted model file to write (.autoreg)", &S::out, true),
        {"method", "method", kAdaptMethodNames.joined(),
         "ftm (a scale and a shift per channel after every operation, the weights frozen) or finetune (every weight)",
         [](const S& s) { return std::string(to_string(s.method)); },
         [](S& s, const std::string& t) { s.method = parse_adapt_method(t); }},
        base::whole_field<S>("steps", "steps", "N", "adaptation steps, one pair each", &S::steps),
        base::with_aliases<S>(
            {"learning_rate", "learning-rate", "R", "Adam learning rate (default 1e-3 for ftm, 1e-4 for finetune)",
             [](const S& s) { return s.learning_rate ? base::exact_text(*s.learning_rate) : std::string(); },
             [](S& s, const std::string& t) { s.learning_rate = base::real_number("learning-rate", t); }},
            {"lr"}),
        base::whole_field<S>("checkpoint_every", "checkpoint-every", "N", "steps between checkpoints", &S::checkpoint_every),
        base::whole_field<S>("validate_every", "validate-every", "N", "steps between validations, with labelled val rows",
                             &S::validate_every)};
    for (auto& row : base::nested(model_run_schema("JSON-lines log"), &S::run)) rows.push_back(std::move(row));
    return rows;
  }();
  return schema;
}

std::vector<std::string> to_arguments(const AdaptSettings& s) { return base::arguments("adapt", adapt_schema(), s); }

void adapt(const AdaptSettings& s) {
  validate(s);
  adapt_job(s);
}

}  // namespace autoreg::pipeline
