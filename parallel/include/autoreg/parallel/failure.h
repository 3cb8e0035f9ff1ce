// Failures of long runs, diagnosed: each gets a class from its evidence (how the process
// ended, its last error line, the kernel's OOM count) and the action that class calls
// for, written as one JSON line to the run's failures file (train: <out>.failures.jsonl,
// search: DIR/failures.jsonl):
//   {"time", "rank", "step", "class", "evidence", "action"}
//
//   class               evidence                                   action
//   worker_lost         a rank killed by a signal; a peer's         restart from the last checkpoint
//                       connection closed
//   out_of_memory       the cgroup's oom_kill count rose; bad_alloc, restart from the last checkpoint
//                       "out of memory"
//   collective_timeout  a rank that did not answer within            restart from the last checkpoint
//                       --collective-timeout (stopped or hung)
//   non_finite          a non-finite loss or gradient, or a          rolled back to the last good state
//                       gradient spike (the fault guard)             (in the run); stop when it repeats
//   unreadable_data     a manifest row that cannot be read           skipped
//   disk_full           ENOSPC ("No space left on device")           stop: a restart fails the same way
//   bad_input           exit 2 (unreadable or inconsistent input)   stop
//                       or 1 (a usage error)
//   programming_error   a logic error or failed check               stop: a restart fails the same way
//   failure             any other non-zero exit                      restart from the last checkpoint
#pragma once

#include <cstdint>
#include <exception>
#include <string>

namespace autoreg::parallel {

struct Failure {
  std::string cls;       // one of the classes above
  std::string evidence;  // what it was told from, on one line
  int rank = -1;         // -1: the run as a whole
  int64_t step = -1;     // the step it happened at (-1: unknown)
  std::string action;
};

// Whether a restart can help: false for disk_full, bad_input, programming_error and a
// non_finite that the run gave up on.
bool restartable(const std::string& cls);

// The class of an exception that ended a worker (exit_code: what main maps it to).
std::string classify_exception(const std::exception& e, int exit_code);

// The class of a worker's last error line (what classify_exception reads from messages).
std::string classify_message(const std::string& message);

// The lines a run writes itself: a fault rolled back at `step` (`sizes`: what was made
// smaller, e.g. "a smaller learning rate"), and a manifest row left out (`what`: the row and why).
Failure rolled_back(int64_t step, int64_t rollbacks, const std::string& sizes);
Failure skipped_row(const std::string& what);

// Appends one JSON line to `path` (created when absent), flushed at once.
void append_failure(const std::string& path, const Failure& f);

// The kernel's count of OOM kills in this process's cgroup (cgroup v2 memory.events),
// or -1 where it cannot be read.
int64_t oom_kill_count();

}  // namespace autoreg::parallel
