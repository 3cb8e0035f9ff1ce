// Evaluation decoupled from training: a process of its own that watches a run's
// checkpoint file, evaluates each new checkpoint (validation Dice, folding, the time it
// took), appends one JSON line per checkpoint to the run's validation file, and keeps the
// best checkpoint by Dice. Training never waits for it; the run reads its lines as they
// arrive (train: into its log and progress line). `autoreg validate` is the command; this
// is its loop, with the evaluation itself handed in (it needs the dataset, which the
// pipeline loads).
//
//   {"step": 200, "validation_dice": 0.61, "folding_percent": 0.01, "pairs": 2,
//    "seconds": 3.2, "best": true, "time": "..."}
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "autoreg/registration/archive.h"

namespace autoreg::parallel {

struct Evaluation {
  double dice = 0, folding_percent = 0;
  int64_t pairs = 0;
};

struct WatchOptions {
  std::string checkpoint;      // the run's checkpoint (rewritten in place by the run)
  std::string kind = "CHECKPOINT";  // its archive kind (a search's: SEARCH)
  std::string step_field = "step";  // the field with its step (a search's: search.step)
  std::string results;         // JSON lines, appended (one per evaluated checkpoint)
  std::string best;            // the best checkpoint so far, rewritten when one beats it
  std::string finished;        // a file whose appearance (newer than the checkpoint) ends the watch: the run's model
  double poll_seconds = 0.5;
  std::function<bool()> stop;  // asked between polls: evaluate what is new, then end
  // Called with a checkpoint that beat the best so far (after it is written to `best`).
  std::function<void(const registration::Archive&, const std::string&)> on_best;
  std::function<void(const std::string&)> progress;
};

// Watches until `stop()` or the run has finished; returns the number of checkpoints
// evaluated. A checkpoint already in `results` (a restarted watcher) is not evaluated
// again, and the best so far is read back from there.
int64_t watch_checkpoints(const WatchOptions& options,
                          const std::function<Evaluation(const registration::Archive&, const std::string&)>& evaluate);

// The results evaluated so far (for the run that reads them): every line after
// `after_step`, in order.
struct EvaluatedStep {
  int64_t step;
  double dice, folding_percent, seconds;
  bool best;
};
std::vector<EvaluatedStep> read_evaluations(const std::string& results, int64_t after_step);

// What a run reads of its watcher's results as they arrive: latest() looks at the file
// when it has grown since the last look and returns the newest evaluation after the
// last one returned (none: nothing new).
class EvaluationFollower {
 public:
  EvaluationFollower(std::string results, int64_t after_step) : results_(std::move(results)), step_(after_step) {}
  std::optional<EvaluatedStep> latest();

 private:
  std::string results_;
  int64_t step_;
  uintmax_t size_ = 0;
};

}  // namespace autoreg::parallel
