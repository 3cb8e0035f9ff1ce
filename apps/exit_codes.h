// The command line's exit codes (DESIGN.md) and the usage error that maps to 1.
#pragma once

#include <stdexcept>

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

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A long run stopped by SIGINT/SIGTERM after writing a checkpoint (exit 4).
class Interrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The exit code of an error that ends a subcommand.
inline int exit_code(const std::exception& e) {
  if (dynamic_cast<const Interrupted*>(&e)) return kInterrupted;
  if (dynamic_cast<const UsageError*>(&e)) return kUsage;
  if (dynamic_cast<const registration::ModelFileError*>(&e)) return kBadInput;
  if (dynamic_cast<const io::IoError*>(&e)) return kBadInput;
  return kFailure;
}

}  // namespace autoreg::apps
