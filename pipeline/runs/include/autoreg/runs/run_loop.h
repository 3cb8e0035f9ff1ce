// The one loop of the long runs (train, adapt, search and its retraining): steps until a
// count or a time budget, a JSON line per step, validation (inline, or a watcher's
// results as they arrive), checkpoints, a progress line, rollbacks recorded, and a stop
// at SIGINT/SIGTERM that writes a checkpoint first. What it steps is a
// registration::SteppedRun (a Trainer or a Searcher) through a LoopedRun, which says
// what one step of that kind logs.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <string>

#include "autoreg/runs/run_settings.h"
#include "autoreg/registration/stepped_run.h"

namespace autoreg::registration {
class Trainer;
}

namespace autoreg::pipeline {

// From now on SIGINT and SIGTERM ask the long loops to stop at the end of their step.
void install_stop_handlers();
// Whether a stop was asked for.
bool stop_requested();

struct RunLoop {
  std::string log;              // JSON lines, one per step (appended to when resuming)
  std::string failures;         // JSON lines, one per fault rolled back (parallel/failure.h); "": none
  std::string checkpoint;
  int64_t steps = 0;            // stop at this step; 0: by the time budget alone
  double budget_seconds = 0;    // > 0: also stop once the run's time (all runs) reaches it
  double earlier_seconds = 0;   // the run's time before this run (resume)
  int64_t checkpoint_every = 100, validate_every = 100;
  // A progress line every this many steps (0: by time), or after this many seconds
  // (0: by steps), and after the first and the last step.
  int64_t progress_every = 10;
  double progress_seconds = 0;
  std::string label = "step";   // the progress line's first words
  Validation validation = Validation::Inline;
  std::string evaluations;      // decoupled: the watcher's results (JSON lines, parallel/evaluation.h)
  // Inline validation: called with each validated step and its Dice (rank 0).
  std::function<void(int64_t step, double dice)> on_validated;
  // Before each checkpoint, with the run's time so far (all runs).
  std::function<void(double seconds)> before_checkpoint;
};

struct RunOutcome {
  double validation_dice;       // of the last step validated (validated at the end); NaN: none
  double seconds;               // the run's time, all runs
  double seconds_this_run;
};

// One step as the loop logs it.
struct LoopStep {
  int64_t step = 0;             // steps done, this one included (a rollback makes it go back)
  int64_t rollbacks = 0;        // so far
  nlohmann::json line;          // its log line; the loop adds seconds and validation
};

// A kind of run as the loop drives it: its steps and what they report.
class LoopedRun {
 public:
  explicit LoopedRun(registration::SteppedRun& run) : run_(run) {}
  virtual ~LoopedRun() = default;
  registration::SteppedRun& run() const { return run_; }
  // One step; `seconds`: the run's time so far (rank 0's clock, all runs).
  virtual LoopStep step(double seconds) = 0;
  // The progress line's middle, after "<label> <step>[/<steps>]", for the last step, with
  // the last validation Dice (NaN: none yet).
  virtual std::string progress(double validation) const = 0;
  // What a rollback did, for the failures file and the progress line ("a smaller
  // learning rate").
  virtual const char* remedy() const = 0;
  // The run's name in the message of a stop ("interrupted (search) at step 7"); "": none.
  virtual const char* name() const { return ""; }

 private:
  registration::SteppedRun& run_;
};

// Runs `run` on until loop.steps or the budget. Throws Interrupted (after a checkpoint)
// when a stop was asked for (on any rank: the ranks agree each step). Data-parallel,
// rank 0 alone logs, validates and prints; every rank takes part in the checkpoints.
RunOutcome run_loop(LoopedRun& run, const RunLoop& loop);

// A Trainer's run (train, adapt, the search's retraining): the log line holds step,
// loss, similarity, smoothness, dice_loss, gradient_norm, rollbacks, seconds (and
// allreduce_seconds, validation_dice); a finished run resumed validates the model all
// the same.
RunOutcome run_training(registration::Trainer& trainer, const RunLoop& loop);

}  // namespace autoreg::pipeline
