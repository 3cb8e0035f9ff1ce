// The command line's exit codes (docs/design.md) and the usage error that maps to 1.
#pragma once

#include <stdexcept>

#include "autoreg/base/atomic_file.h"
#include "autoreg/base/errors.h"
#include "autoreg/io/volume.h"
#include "autoreg/registration/archive.h"

namespace autoreg::apps {

enum ExitCode : int {
  kOk = 0,
  kUsage = 1,     // unknown subcommand or option, bad option value, output = input
  kBadInput = 2,  // unreadable, inconsistent or non-finite input; unwritable output
  kFailure = 3,   // anything that fails while running
  kInterrupted = 4,  // SIGINT/SIGTERM during a long run: a checkpoint was written, --resume continues
  kSomePairsFailed = 5,  // register --pairs: some pairs failed and were skipped; the others are written
};

using base::Interrupted;
using base::UsageError;

// The exit code of an error that ends a subcommand.
inline int exit_code(const std::exception& e) {
  if (dynamic_cast<const Interrupted*>(&e)) return kInterrupted;
  if (dynamic_cast<const UsageError*>(&e)) return kUsage;
  if (dynamic_cast<const registration::ModelFileError*>(&e)) return kBadInput;
  if (dynamic_cast<const io::IoError*>(&e)) return kBadInput;
  if (dynamic_cast<const base::WriteError*>(&e)) return kBadInput;  // an unwritable output
  return kFailure;
}

}  // namespace autoreg::apps
