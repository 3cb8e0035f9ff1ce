// The options `train`, `search` and `template` share for running on many processes
// (docs/distributed.md). Under `--nproc N` the job supervises N ranks of the command line
// its settings write; started by torchrun, srun or that supervisor, it joins the others
// (parallel/ranks.h). The work itself is the library's; this is the command line's side.
#pragma once

#include <tclap/CmdLine.h>

#include "autoreg/parallel/scale_out.h"
#include "exit_codes.h"

namespace autoreg::apps {

struct ScaleOutArgs {
  explicit ScaleOutArgs(TCLAP::CmdLine& cmd)
      : nproc("", "nproc", "run N data-parallel ranks on this machine, supervised (each with --threads threads; default: one process)", false, 0, "N", cmd),
        max_restarts("", "max-restarts", "with --nproc: restart the ranks from the last checkpoint after a failure, up to R times (default 0)", false, 0, "R", cmd),
        collective_timeout("", "collective-timeout", "seconds a rank waits for the others in a collective before it is a failure (a hung rank; default 600)", false, 600, "S", cmd) {}

  // The settings; what only the command line can get wrong (--nproc 0, --max-restarts
  // without --nproc) is a UsageError here, the rest in parallel::validate.
  parallel::ScaleOut settings() const {
    if (nproc.isSet() && nproc.getValue() < 1) throw UsageError("--nproc must be at least 1");
    if (max_restarts.isSet() && !nproc.isSet()) {
      throw UsageError("--max-restarts needs --nproc (under torchrun: --max-restarts of torchrun)");
    }
    return {nproc.getValue(), max_restarts.getValue(), collective_timeout.getValue()};
  }

  TCLAP::ValueArg<int> nproc;
  TCLAP::ValueArg<int> max_restarts;
  TCLAP::ValueArg<double> collective_timeout;
};

}  // namespace autoreg::apps
