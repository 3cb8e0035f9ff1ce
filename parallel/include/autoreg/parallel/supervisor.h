// The `--nproc N` launcher: starts N ranks of a command on this machine (torchrun's
// variables: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR=127.0.0.1, a free MASTER_PORT,
// OMP_NUM_THREADS), forwards their output (rank 0's as it is, the others' prefixed
// "[rank K]"), and when a rank fails (a signal, a non-zero exit, a collective timeout)
// ends the others, diagnoses the failure (failure.h: one JSON line in the failures
// file) and, where a restart can help, starts all ranks again, up to max_restarts times;
// the ranks resume from the run's checkpoint by themselves (TORCHELASTIC_RESTART_COUNT
// > 0, as under torchrun). The same class `max_same_failure` times in a row, with no
// step done in between, stops it.
//
// Each rank reports to the supervisor through two small files in a private folder
// (AUTOREG_WORKER_STATUS=<folder>/rank-K): the step it is at, and the class and message of
// the exception that ended it (worker.h).
#pragma once

#include <string>
#include <vector>

namespace autoreg::parallel {

struct SupervisorOptions {
  std::vector<std::string> command;  // one rank's argv, the executable first (no --nproc)
  int nproc = 1;
  int threads = 0;                   // OMP_NUM_THREADS of each rank; 0: cores / nproc (at least 1)
  int max_restarts = 0;
  int max_same_failure = 3;          // the same class this many times in a row (no step done between) stops the run
  double collective_timeout_s = 600; // how long a hung rank takes to be noticed by its peers
  std::string failures;              // the failures file (JSON lines)
  std::string label = "autoreg";     // the messages' first word
};

// Runs the ranks to the end; returns the exit code for the command: 0 when the last
// attempt succeeded, 4 when stopped by SIGINT/SIGTERM (forwarded to the ranks, which
// write a checkpoint), else the failing rank's code (2 bad input, 3 failure).
int supervise(const SupervisorOptions& options);

}  // namespace autoreg::parallel
