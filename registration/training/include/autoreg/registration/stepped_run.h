// What a long run of steps offers the loop that drives it (pipeline/run_loop.h): training
// (train.h: Trainer) and the search (search/searcher.h: Searcher) are both one, built on
// GuardedRun (guarded_run.h). The loop steps it through its owner's adapter (each kind
// of step reports other things), and through this interface counts its steps and
// rollbacks, validates it, checkpoints it and reads its ranks.
#pragma once

#include <cstdint>
#include <string>

#include "autoreg/registration/collective.h"

namespace autoreg::registration {

class SteppedRun {
 public:
  virtual ~SteppedRun() = default;

  // Data-parallel from here on: rank 0's state is copied to the other ranks of
  // `collective`, which outlives the run; only rank 0 writes checkpoints.
  virtual void distribute(Collective& collective) = 0;
  virtual int rank() const = 0;
  virtual Collective* collective() const = 0;  // null: alone

  virtual int64_t steps_done() const = 0;
  virtual int64_t rollbacks() const = 0;     // faulty steps rolled back so far (kept in checkpoints)

  // Mean Dice of the validation pairs' warped label maps; NaN without labels.
  virtual double validate() = 0;
  // How many labelled pairs validate() averages over (0: it returns NaN).
  virtual int64_t validation_pair_count() const = 0;

  // The run's state, written atomically by rank 0 (in the background unless the run was
  // made with synchronous checkpoints); resume() refuses a checkpoint of another run,
  // naming what differs.
  virtual void save_checkpoint(const std::string& path) = 0;
  // Until the checkpoints handed to the background writer are on disk (throws a failed
  // write's error). Call before reporting a run complete or stopped.
  virtual void finish_checkpoints() = 0;
  virtual void resume(const std::string& path) = 0;
};

}  // namespace autoreg::registration
