// The options of a job on many processes (docs/distributed.md) that `train`, `search`,
// `adapt` and `template` share; no LibTorch types, so that a job's settings header stays
// light (the rest of a rank's side is ranks.h).
#pragma once

namespace autoreg::parallel {

struct ScaleOut {
  int nproc = 0;                      // > 0: supervise this many ranks on this machine (--nproc)
  int max_restarts = 0;               // with nproc: restarts after a failure (--max-restarts)
  double collective_timeout_s = 600;  // a rank waiting longer for the others fails (--collective-timeout)
};

// A UsageError (base/errors.h) naming the option when the settings cannot run, or ask
// for a supervisor inside a launcher.
void validate(const ScaleOut& s);

}  // namespace autoreg::parallel
