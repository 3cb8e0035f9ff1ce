#include "autoreg/runs/validate_job.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "autoreg/device.h"
#include "autoreg/io/manifest.h"
#include "autoreg/io/volume.h"
#include "autoreg/parallel/evaluation.h"
#include "autoreg/runs/dataset.h"
#include "autoreg/runs/run_loop.h"
#include "autoreg/registration/model_file.h"
#include "autoreg/registration/training_pairs.h"

namespace autoreg::pipeline {

namespace fs = std::filesystem;

void validate_checkpoints(const std::string& out, const std::string& device,
                          const std::function<void(const std::string&)>& log) {
  const std::string description = out + ".run.json", checkpoint = out + ".ckpt";
  std::ifstream in(description);
  if (!in) throw io::IoError(description + ": no run description (train writes it when it starts)");
  const nlohmann::json run = nlohmann::json::parse(in, nullptr, false);
  if (run.is_discarded() || !run.contains("manifest")) throw io::IoError(description + ": not a run description");
  // The data waits for the first checkpoint: the model's grid and frame are in it.
  while (!fs::exists(checkpoint)) {
    if (stop_requested()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  registration::Model first = registration::model_from_archive(registration::read_archive(checkpoint, "CHECKPOINT"), checkpoint);
  DatasetOptions dataset;
  dataset.cache_dir = run.value("cache", out + ".cache");
  dataset.affine.similarity = registration::parse_similarity(run.value("similarity", std::string("ncc")));
  dataset.max_unreadable_fraction = run.value("max_unreadable", 0.0);
  registration::TrainingSet data =
      load_training_set(io::read_manifest(run["manifest"].get<std::string>()), first.info,
                        run.value("size_multiple", int64_t(4)), dataset);
  data.train.clear();  // only the validation subjects are evaluated
  const uint64_t seed = run.value("seed", uint64_t(0));
  const at::Device where = ops::parse_device(device);
  log("watching " + checkpoint + " (" + std::to_string(data.validation.size()) + " validation subjects)");
  parallel::WatchOptions o;
  o.checkpoint = checkpoint;
  o.results = out + ".validation.jsonl";
  o.best = out + ".best.ckpt";
  o.finished = out;
  o.stop = stop_requested;
  // The best checkpoint's network as a model file too, ready for `register --model`.
  o.on_best = [&](const registration::Archive& a, const std::string& path) {
    registration::save_model(out + ".best.autoreg", registration::model_from_archive(a, path));
  };
  o.progress = log;
  parallel::watch_checkpoints(o, [&](const registration::Archive& a, const std::string& path) {
    registration::Model m = registration::model_from_archive(a, path);
    m.network->to(where);
    const registration::ValidationScores s = registration::validation_scores(*m.network, data, seed, where);
    return parallel::Evaluation{s.dice, s.folding_percent, s.pairs};
  });
}

}  // namespace autoreg::pipeline
