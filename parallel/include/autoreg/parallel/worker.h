// What a rank tells its supervisor (supervisor.h), when it has one (AUTOREG_WORKER_STATUS
// set): the step it is at, and how it failed. Both are no-ops without a supervisor, so a
// command calls them unconditionally.
#pragma once

#include <cstdint>
#include <exception>
#include <string>

namespace autoreg::parallel {

// Started by a supervisor or a run (AUTOREG_SUPERVISOR_PID: its pid): dies with it
// (PR_SET_PDEATHSIG), so that no rank or watcher outlives a killed launcher. Call once
// at the start.
void attach_to_supervisor();
// The step this rank has done (8 bytes written in place; cheap enough for every step).
void report_step(int64_t step);
int64_t reported_step();
// The exception that ends this rank, classified (failure.h), for the supervisor's
// diagnosis. `exit_code`: what the command exits with.
void report_failure(const std::exception& e, int exit_code);

}  // namespace autoreg::parallel

namespace autoreg::parallel {

// Tests of the diagnosis: AUTOREG_INJECT_FAILURE="<class>@<step>[@<rank>]" (rank 0 by
// default) makes that rank fail so before that step (1-based), in a run's first attempt
// only (TORCHELASTIC_RESTART_COUNT unset or 0), so that a restart gets past it:
//   worker_lost        SIGKILL to itself          collective_timeout  SIGSTOP to itself
//   out_of_memory      throws std::bad_alloc      disk_full           throws ENOSPC
//   programming_error  throws std::logic_error    non_finite          the step's loss is NaN
// (the trainer's: `injected_non_finite_step`). Any other class is a UsageError-like
// std::invalid_argument at the first call.
void inject_failure(int64_t step, int rank);
// The step whose loss the trainer makes NaN for this rank, or -1.
int64_t injected_non_finite_step(int rank);

}  // namespace autoreg::parallel
