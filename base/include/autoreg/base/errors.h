// The errors every room may throw beside its own (io::IoError, registration::
// ModelFileError for bad input; base::WriteError for an output that cannot be written):
// what the command line maps to its exit codes (apps/exit_codes.h).
#pragma once

#include <stdexcept>

namespace autoreg::base {

// Settings or a command line that contradict themselves or are out of range (exit 1).
// The message names the command-line option.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A long run stopped by SIGINT/SIGTERM after writing a checkpoint (exit 4).
class Interrupted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace autoreg::base
