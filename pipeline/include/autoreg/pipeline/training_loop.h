// The training loop `train` and `search` (its retraining) share: steps until a count or
// a time budget, a JSON line per step, validation, checkpoints, a progress line, and a
// stop at SIGINT/SIGTERM that writes a checkpoint first.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "autoreg/pipeline/run_settings.h"
#include "autoreg/registration/train.h"

namespace autoreg::pipeline {

// From now on SIGINT and SIGTERM ask the long loops to stop at the end of their step.
void install_stop_handlers();
// Whether a stop was asked for.
bool stop_requested();

struct TrainingLoop {
  std::string log;              // JSON lines, one per step (appended to when resuming)
  std::string failures;         // JSON lines, one per fault rolled back (parallel/failure.h); "": none
  std::string checkpoint;
  int64_t steps = 0;            // stop at this step
  double budget_seconds = 0;    // > 0: also stop once the training time (all runs) reaches it
  double earlier_seconds = 0;   // training time before this run (resume)
  int64_t checkpoint_every = 100, validate_every = 100;
  std::string label = "step";   // the progress line's first word
  Validation validation = Validation::Inline;
  std::string evaluations;      // decoupled: the watcher's results (JSON lines, parallel/evaluation.h)
  // Inline validation: called with each validated step and its Dice (rank 0).
  std::function<void(int64_t step, double dice)> on_validated;
};

struct TrainingOutcome {
  double validation_dice;       // of the last step validated (validated at the end); NaN: none
  double seconds;               // training time of all runs
  double seconds_this_run;
};

// Runs `trainer` on. The log line: step, loss, similarity, smoothness, dice_loss,
// seconds, and validation_dice when validated. Throws Interrupted (after a checkpoint)
// when a stop was asked for (on any rank: the ranks agree each step). Data-parallel,
// rank 0 alone logs, validates and prints; every rank takes part in the checkpoints
// (trainer.h).
TrainingOutcome run_training(registration::Trainer& trainer, const TrainingLoop& loop);

}  // namespace autoreg::pipeline
