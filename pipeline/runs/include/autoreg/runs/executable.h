// The `autoreg` command the long-run jobs start as child processes (the decoupled
// validation watcher, the ranks under --nproc): this process when it is autoreg, else
// the one installed beside this library, else the build tree's.
#pragma once

#include <string>

namespace autoreg::pipeline {

// $AUTOREG_EXECUTABLE when set; this process's executable when it is named `autoreg`;
// bin/autoreg of the installation this library belongs to; the build tree's autoreg.
// Throws base::UsageError naming the places looked at when none exists (a program of
// one's own then sets AUTOREG_EXECUTABLE, a job's `executable`, or validation inline).
std::string autoreg_executable();

}  // namespace autoreg::pipeline
