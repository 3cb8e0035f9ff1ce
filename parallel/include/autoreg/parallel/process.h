// Starting the processes a run is made of (ranks, the evaluation watcher): this
// executable again, with an environment of its own.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace autoreg::parallel {

// This executable's path (/proc/self/exe).
std::string this_executable();

// Starts argv (argv[0]: the program's path) with this process's environment less `drop`,
// plus `set`; standard input from /dev/null; standard output and error into `output`
// (a file descriptor; -1: this process's). `hold_stop_signals`: SIGINT and SIGTERM start
// blocked in the child (held until it unblocks them, once its handlers are in place, so
// that a stop asked for while it starts is not lost). Throws std::runtime_error when it
// cannot.
pid_t spawn_process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& set,
                    const std::vector<std::string>& drop, int output, bool hold_stop_signals = false);

// Unblocks SIGINT and SIGTERM (held by spawn_process): call after installing handlers.
void release_stop_signals();

}  // namespace autoreg::parallel
