// The exit codes of autoreg's commands (docs/cli.md) and which error ends a job with
// which: the command line returns them, and a rank of a distributed job reports them to
// its supervisor or writes them into its own failure diagnosis (parallel/ranks.h).
#pragma once

#include <stdexcept>

#include "autoreg/base/atomic_file.h"
#include "autoreg/base/errors.h"
#include "autoreg/io/volume.h"
#include "autoreg/parallel/ranks.h"
#include "autoreg/registration/archive.h"

namespace autoreg::pipeline {

enum ExitCode : int {
  kOk = 0,
  kUsage = 1,     // unknown subcommand or option, bad option value, output = input
  kBadInput = 2,  // unreadable, inconsistent or non-finite input; unwritable output
  kFailure = 3,   // anything that fails while running
  kInterrupted = 4,  // SIGINT/SIGTERM during a long run: a checkpoint was written, --resume continues
  kSomePairsFailed = 5,  // register --pairs: some pairs failed and were skipped; the others are written
  kCheckFailed = 6,  // register --strict: the outputs are written, but a failure check warned (pair_checks.h)
};

// The exit code of an error that ends a job.
inline int exit_code(const std::exception& e) {
  if (dynamic_cast<const base::Interrupted*>(&e)) return kInterrupted;
  if (const auto* r = dynamic_cast<const parallel::RanksFailed*>(&e)) return r->code;  // the ranks' own
  if (dynamic_cast<const base::UsageError*>(&e)) return kUsage;
  if (dynamic_cast<const registration::ModelFileError*>(&e)) return kBadInput;
  if (dynamic_cast<const io::IoError*>(&e)) return kBadInput;
  if (dynamic_cast<const base::WriteError*>(&e)) return kBadInput;  // an unwritable output
  return kFailure;
}

}  // namespace autoreg::pipeline
