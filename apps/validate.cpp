// autoreg validate --run OUT [--threads T] [--device cpu|cuda]
//
// Evaluation decoupled from training (parallel/evaluation.h): watches the checkpoint of
// the training run writing OUT (OUT.ckpt), evaluates each new one on the run's
// validation subjects (Dice of warped labels, folding), appends a line per checkpoint to
// OUT.validation.jsonl and keeps the best checkpoint as OUT.best.ckpt (and its network
// as the model file OUT.best.autoreg). `train` starts
// it by default; it can also run on its own, e.g. on another machine that shares the
// run's folder. It reads what it needs from OUT.run.json (written by train) and ends
// when the run has written OUT, or at SIGINT/SIGTERM (after the latest checkpoint).
#include <tclap/CmdLine.h>

#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "autoreg/device.h"
#include "autoreg/io/manifest.h"
#include "autoreg/io/volume.h"
#include "autoreg/parallel/evaluation.h"
#include "autoreg/parallel/process.h"
#include "autoreg/parallel/worker.h"
#include "autoreg/pipeline/dataset.h"
#include "autoreg/registration/model_file.h"
#include "autoreg/registration/training_pairs.h"
#include "common_args.h"
#include "exit_codes.h"
#include "autoreg/pipeline/training_loop.h"

namespace autoreg::apps {
namespace {

namespace fs = std::filesystem;

int validate(const std::string& out, const std::string& device) {
  const std::string description = out + ".run.json", checkpoint = out + ".ckpt";
  std::ifstream in(description);
  if (!in) throw io::IoError(description + ": no run description (train writes it when it starts)");
  const nlohmann::json run = nlohmann::json::parse(in, nullptr, false);
  if (run.is_discarded() || !run.contains("manifest")) throw io::IoError(description + ": not a run description");
  // The data waits for the first checkpoint: the model's grid and frame are in it.
  while (!fs::exists(checkpoint)) {
    if (pipeline::stop_requested()) return kOk;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  registration::Model first = registration::model_from_archive(registration::read_archive(checkpoint, "CHECKPOINT"), checkpoint);
  pipeline::DatasetOptions dataset;
  dataset.cache_dir = run.value("cache", out + ".cache");
  dataset.affine.similarity = registration::parse_similarity(run.value("similarity", std::string("ncc")));
  dataset.max_unreadable_fraction = run.value("max_unreadable", 0.0);
  registration::TrainingSet data =
      pipeline::load_training_set(io::read_manifest(run["manifest"].get<std::string>()), first.info,
                                  run.value("size_multiple", int64_t(4)), dataset);
  data.train.clear();  // only the validation subjects are evaluated
  const uint64_t seed = run.value("seed", uint64_t(0));
  const at::Device where = ops::parse_device(device);
  std::fprintf(stderr, "validate: watching %s (%zu validation subjects)\n", checkpoint.c_str(), data.validation.size());
  parallel::WatchOptions o;
  o.checkpoint = checkpoint;
  o.results = out + ".validation.jsonl";
  o.best = out + ".best.ckpt";
  o.finished = out;
  o.stop = pipeline::stop_requested;
  // The best checkpoint's network as a model file too, ready for `register --model`.
  o.on_best = [&](const registration::Archive& a, const std::string& path) {
    registration::save_model(out + ".best.autoreg", registration::model_from_archive(a, path));
  };
  o.progress = [](const std::string& line) { std::fprintf(stderr, "validate: %s\n", line.c_str()); };
  parallel::watch_checkpoints(o, [&](const registration::Archive& a, const std::string& path) {
    registration::Model m = registration::model_from_archive(a, path);
    m.network->to(where);
    const registration::ValidationScores s = registration::validation_scores(*m.network, data, seed, where);
    return parallel::Evaluation{s.dice, s.folding_percent, s.pairs};
  });
  return kOk;
}

}  // namespace

int run_validate(int argc, char** argv) {
  TCLAP::CmdLine cmd("Evaluate a training run's checkpoints as they are written (validation Dice, folding), "
                     "decoupled from the training; keeps the best checkpoint.", ' ', "0.1");
  TCLAP::ValueArg<std::string> run("", "run", "the run's model file (train --out): OUT.ckpt is watched", true, "", "OUT", cmd);
  ThreadsArg threads(cmd, 1, "CPU threads (default 1: the training keeps the rest)");
  DeviceArg device(cmd);
  cmd.setExceptionHandling(false);
  cmd.parse(argc, argv);
  if (threads.value() < 1) throw UsageError("--threads must be at least 1");
  threads.apply();
  parallel::attach_to_supervisor();  // started by train: ends with it
  pipeline::install_stop_handlers();
  parallel::release_stop_signals();  // held by train until now (validation_process.cpp)
  return validate(run.getValue(), device.value());
}

}  // namespace autoreg::apps
