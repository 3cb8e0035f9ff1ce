// The command line's exit codes (autoreg/runs/exit_codes.h owns them) under the names the
// subcommands use, and the usage error that maps to 1.
#pragma once

#include "autoreg/base/errors.h"
#include "autoreg/runs/exit_codes.h"

namespace autoreg::apps {

using base::Interrupted;
using base::UsageError;
using pipeline::exit_code;
using pipeline::ExitCode;
using pipeline::kBadInput;
using pipeline::kCheckFailed;
using pipeline::kFailure;
using pipeline::kInterrupted;
using pipeline::kOk;
using pipeline::kSomePairsFailed;
using pipeline::kUsage;

}  // namespace autoreg::apps
