// The device check's training: the default model's recipe (its network, λ, learning
// rate and Dice weight, read from the model file given) trained from scratch on a packed
// training set for a fixed time, then scored on the set's validation pairs and written as
// a model file whose notes say where and how long it was trained. A JSON line per step
// goes to --log.
#include <ATen/ATen.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>

#include "autoreg/registration/model_file.h"
#include "autoreg/registration/train.h"
#include "autoreg/registration/training_pairs.h"
#include "autoreg/registration/training_set_file.h"
#include "device_check.h"

namespace autoreg::device {

nlohmann::json train(const Args& args) {
  const at::Device device(args.get("device", "cpu") == "cuda" ? at::kCUDA : at::kCPU);
  if (!args.has("set") || !args.has("model") || !args.has("out")) {
    throw std::invalid_argument("train needs --set FILE --model RECIPE --out MODEL");
  }
  const double minutes = args.number("minutes", 5);
  const registration::TrainingSetFile set = registration::read_training_set(args.get("set"));
  const registration::Model recipe = registration::load_model(args.get("model"));
  registration::ModelInfo info = set.info;  // the set's grid, spacing, orientation
  info.network = recipe.info.network;
  info.notes.clear();
  registration::TrainOptions o = recipe_options(recipe.info, device);
  o.seed = uint64_t(args.number("seed", 0));
  o.steps = int64_t(1) << 40;
  at::manual_seed(o.seed);
  registration::Model model = registration::make_model(info);
  registration::Trainer trainer(model, set.set, o);

  std::ofstream log;
  if (args.has("log")) log.open(args.get("log"));
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto seconds = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  reset_peak(device);
  double last_print = -1e9;
  registration::StepReport r;
  while (seconds() < minutes * 60) {
    r = trainer.train_step();
    const double t = seconds();
    if (log) {
      log << nlohmann::json{{"step", r.step}, {"loss", r.loss}, {"dice_loss", r.dice}, {"seconds", t}}.dump() << "\n";
    }
    if (t - last_print > 15) {
      last_print = t;
      std::fprintf(stderr, "train: step %ld  loss %.4f  %.0f s of %.0f  %.3f s/step\n", long(r.step), r.loss, t,
                   minutes * 60, t / double(r.step));
    }
  }
  const double trained = seconds();
  const double peak = peak_mib(device);
  sync(device);
  const registration::ValidationScores v = registration::validation_scores(*model.network, set.set, o.seed, device);
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  auto& notes = model.info.notes;
  notes["trained"] = date;
  notes["trained_on"] = device_name(device);
  notes["recipe"] = "the default model's (" + args.get("model") + "), scripts/device-check.sh";
  notes["training_minutes"] = std::to_string(minutes);
  notes["steps"] = std::to_string(trainer.steps_done());
  notes["training_seconds"] = std::to_string(trained);
  notes["learning_rate"] = std::to_string(o.learning_rate);
  notes["dice_weight"] = std::to_string(o.dice_weight);
  if (o.objective) notes["objective"] = o.objective->to_string();
  notes["subjects"] = std::to_string(set.set.train.size()) + " train, " + std::to_string(set.set.validation.size()) + " validation";
  if (std::isfinite(v.dice)) notes["validation_dice"] = std::to_string(v.dice);
  model.network->to(at::kCPU);
  registration::save_model(args.get("out"), model);
  std::fprintf(stderr, "train: wrote %s (%ld steps in %.0f s, validation Dice %.4f)\n", args.get("out").c_str(),
               long(trainer.steps_done()), trained, v.dice);
  return {{"device", device_name(device)},
          {"steps", trainer.steps_done()},
          {"seconds", trained},
          {"steps_per_second", double(trainer.steps_done()) / trained},
          {"last_loss", r.loss},
          {"validation_dice", std::isfinite(v.dice) ? nlohmann::json(v.dice) : nlohmann::json()},
          {"folding_percent", v.folding_percent},
          {"peak_mib", peak},
          {"grid", info.grid},
          {"model", args.get("out")}};
}

}  // namespace autoreg::device
