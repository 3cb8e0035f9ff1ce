// The skeleton a long run (training, the search) is built on, written once: the step
// loop that rolls a faulty step back (fault_guard.h: a non-finite value or a spiking
// gradient sends the run back to its last good state at half the step sizes), the
// in-memory good states, checkpoints (every rank keeps its state as the one a fault rolls
// back to; rank 0 alone writes it, in the background) and resuming, and the ranks of a
// data-parallel run (rank 0's starting state copied to the others).
//
// The run's owner keeps what differs: its state as an Archive (and restoring it), its
// step sizes (set again when the guard halves them), one step's attempt, and what a
// checkpoint must match to be resumed. A run is a member of its owner, made with hooks
// into it; start() takes the first good state once the owner is whole.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "autoreg/registration/archive.h"
#include "autoreg/registration/checkpoint_writer.h"
#include "autoreg/registration/collective.h"
#include "autoreg/registration/fault_guard.h"

namespace autoreg::registration {

class GuardedRun {
 public:
  struct Setup {
    double spike_factor = 20;      // FaultGuard's (0: only non-finite values are faults)
    int64_t max_rollbacks = 5;     // faulty steps in a row before the run stops
    int64_t snapshot_every = 10;   // steps between in-memory good states
    bool async_checkpoints = true; // written by a background thread (checkpoint_writer.h)
    // false: a step is run once and a fault stops the run (training with the guard off).
    bool guarded = true;
    std::string who;               // in the error that stops the run ("training", "the search")
    std::string advice;            // its advice ("try a lower --learning-rate")
    std::string kind;              // the checkpoint's archive kind ("CHECKPOINT", "SEARCH")
  };
  struct Hooks {
    std::function<Archive()> state;                                    // the whole state now (CPU copies)
    std::function<void(const Archive&, const std::string&)> load;      // restore one (`path` names it in errors)
    std::function<void()> apply_step_scale;                            // the guard's lr_scale() changed
    std::function<int64_t()> steps_done;                               // before the step being tried
  };
  // What an accepted attempt reports: steps done with it, the gradient norm the guard
  // tracks, and its phase (a new phase restarts the guard's running average).
  struct Outcome {
    int64_t steps_done = 0;
    double gradient_norm = 0;
    std::string phase;
  };

  GuardedRun(Setup setup, Hooks hooks);
  GuardedRun(const GuardedRun&) = delete;
  GuardedRun& operator=(const GuardedRun&) = delete;

  // The first good state (guarded runs), once the owner is whole.
  void start();
  // Runs `attempt` until the guard accepts one: on a StepFault the last good state is
  // restored, the step sizes halve and the step is tried again; more than max_rollbacks
  // in a row throw std::runtime_error naming `who`. `attempt` fills the owner's report.
  void step(const std::function<Outcome()>& attempt);

  // Data-parallel from here on: rank 0's `starting` tensors are copied into every rank's,
  // in place. `collective` outlives the run.
  void distribute(Collective& collective, std::vector<at::Tensor> starting);
  int rank() const { return collective_ ? collective_->rank() : 0; }
  int world() const { return collective_ ? collective_->world() : 1; }
  Collective* collective() const { return collective_; }

  // The state now, kept as the good state a fault rolls back to (as in a run resumed
  // from it: both continue alike) and written by rank 0 to `path`, atomically, in the
  // background.
  void checkpoint(const std::string& path);
  // Until the checkpoints handed to the writer are on disk (throws a failed write's error).
  void finish_checkpoints() { writer_.wait(); }
  // A checkpoint of this kind read from disk (ModelFileError when it is not one).
  Archive read(const std::string& path) const;
  // Restores `checkpoint` (already checked against the owner's options) and keeps it as
  // the good state.
  void restore(const Archive& checkpoint, const std::string& path);

  FaultGuard& guard() { return guard_; }
  const FaultGuard& guard() const { return guard_; }

 private:
  Setup setup_;
  Hooks hooks_;
  FaultGuard guard_;
  Snapshots snapshots_;
  CheckpointWriter writer_;
  Collective* collective_ = nullptr;
};

}  // namespace autoreg::registration
