// The guard that long runs (training, the search) share against divergence: a step whose
// loss or gradient is not finite, or whose gradient norm spikes to `spike_factor` × its
// running average, is a fault; the run goes back to its last good state at half the step
// sizes and goes on. More than `max_rollbacks` faults in a row stop it. Clipping bounds
// one step, not a run of them: on OASIS-TRT a network trained 450 steps well, then warped
// everything away within 10 steps (gradient norm 0.4 → 16 → 900 in a search), every value
// finite.
//
// The owner keeps the last good state (including this guard, save()/load()) and calls:
//   check(norm, phase) before applying a step (throws StepFault),
//   accepted(steps_done, norm, phase) after it,
//   on a StepFault: record = faulted(...); restore the good state; keep(record).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include "autoreg/registration/archive.h"

namespace autoreg::registration {

// A step not to apply: rolled back.
class StepFault : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class FaultGuard {
 public:
  static constexpr int64_t kSpikeSamples = 10;  // steps of a phase before spikes are checked

  // What survives a rollback: the step sizes' scale and the fault counts.
  struct Record {
    double lr_scale = 1;
    int64_t rollbacks = 0, in_a_row = 0, last_fault_step = -1;
  };

  // spike_factor 0: only non-finite values are faults.
  FaultGuard(double spike_factor, int64_t max_rollbacks) : spike_factor_(spike_factor), max_rollbacks_(max_rollbacks) {}

  // Throws StepFault when `gradient_norm` is not finite or is a spike (after kSpikeSamples
  // accepted steps of `phase`).
  void check(double gradient_norm, const std::string& phase = "") const;
  // A good step: `steps_done` counts it. The running average restarts with a new phase
  // (the mean of its first kSpikeSamples steps, then a running average of that horizon).
  void accepted(int64_t steps_done, double gradient_norm, const std::string& phase = "");
  // A fault at step `at_step` (1-based): the record to keep() after restoring the last good
  // state (half the step size, one more rollback). Throws std::runtime_error "<who>
  // stopped: K faulty steps in a row (<why> at step N), even at smaller step sizes; <advice>"
  // beyond max_rollbacks.
  Record faulted(int64_t at_step, const std::string& why, const std::string& who, const std::string& advice) const;
  void keep(const Record& r) { record_ = r; }

  double lr_scale() const { return record_.lr_scale; }
  int64_t rollbacks() const { return record_.rollbacks; }
  double gradient_average() const { return average_; }

  // Fields "<prefix>lr_scale", "<prefix>rollbacks", ..., "<prefix>gradient_phase"; load()
  // reads absent fields as a fresh guard's (checkpoints from before the guard) and throws
  // ModelFileError naming `path` and the field when one is malformed.
  void save(Archive& a, const std::string& prefix) const;
  void load(const Archive& a, const std::string& path, const std::string& prefix);

 private:
  double spike_factor_;
  int64_t max_rollbacks_;
  Record record_;
  double average_ = 0;
  int64_t samples_ = 0;
  std::string phase_;
};

// The good states a fault rolls back to: the latest snapshot, and the one before it for
// a state whose very next step faults (no smaller rate helps there: the gradient is taken
// before the step). None before it right after a checkpoint or a resume, so that a run
// resumed from a checkpoint continues exactly as one that was not stopped.
class Snapshots {
 public:
  void take(Archive state) {
    earlier_ = std::move(latest_);
    has_earlier_ = true;
    latest_ = std::move(state);
  }
  void reset(Archive state) {
    latest_ = std::move(state);
    has_earlier_ = false;
  }
  // The state just rolled back to, rewritten with the guard's new record.
  void replace_latest(Archive state) { latest_ = std::move(state); }
  void accepted() { no_step_since_rollback_ = false; }
  // The state to load after a fault.
  const Archive& rollback() {
    if (no_step_since_rollback_ && has_earlier_) {
      latest_ = earlier_;
      has_earlier_ = false;
    }
    no_step_since_rollback_ = true;
    return latest_;
  }
  const Archive& latest() const { return latest_; }

 private:
  Archive latest_, earlier_;
  bool has_earlier_ = false;
  bool no_step_since_rollback_ = false;
};

}  // namespace autoreg::registration
