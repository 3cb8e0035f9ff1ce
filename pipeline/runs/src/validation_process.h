// Decoupled validation: a child process with its own threads watching the checkpoints a
// run writes: `autoreg validate --run OUT` (apps/validate.cpp) for train's (and the
// search's retraining), the search's own command line (search_job.h, to_arguments) with
// --evaluate for its checkpoints. The child is the autoreg command (executable.h), not
// this process's program, which may be a user's.
// Training never waits for it; at the end the run stops it once the last checkpoint is
// evaluated and reads its results.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "autoreg/parallel/evaluation.h"
#include "autoreg/runs/run_loop.h"
#include "autoreg/registration/similarity.h"

namespace autoreg::pipeline {

struct ValidationRun {
  std::string out;            // train --out
  std::string manifest, cache, device;
  registration::Similarity similarity = registration::Similarity::Ncc;
  int64_t size_multiple = 4;
  double max_unreadable = 0;
  uint64_t seed = 0;
  int threads = 1;
  bool fresh = true;          // a new run: earlier results and best checkpoint removed
  // Non-empty: the watcher is this subcommand and its arguments (a search's, with
  // --evaluate) instead of `validate --run OUT`; it reads no OUT.run.json.
  std::vector<std::string> command;
  std::string executable;     // the autoreg command; "": autoreg_executable()
};

class ValidationProcess {
 public:
  // Writes OUT.run.json (what the watcher needs) and starts the watcher.
  explicit ValidationProcess(const ValidationRun& run);
  ~ValidationProcess();  // kills it when finish() was not called (the run failed)
  ValidationProcess(const ValidationProcess&) = delete;
  ValidationProcess& operator=(const ValidationProcess&) = delete;

  const std::string& results() const { return results_; }
  // Asks the watcher to evaluate what is left and end; waits for it; returns every
  // evaluation of the run.
  std::vector<parallel::EvaluatedStep> finish();

 private:
  std::string results_;
  pid_t pid_ = -1;
};

// The run's validation as `mode` asks, set in `loop`: a
// decoupled one starts `run`'s watcher (returned) on the lead rank when there are pairs
// to validate; without them it is off; inline stays inline.
std::unique_ptr<ValidationProcess> start_validation(const ValidationRun& run, Validation mode, bool lead,
                                                    bool has_pairs, RunLoop& loop);

}  // namespace autoreg::pipeline
