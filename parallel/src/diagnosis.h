// How the ranks of one supervised attempt ended, and the failure behind it: the rank
// whose failure caused the others' (parallel/supervisor.h; the classes are failure.h's).
#pragma once

#include <sys/types.h>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include <deque>
#include <string>
#include <vector>

#include "autoreg/parallel/failure.h"

namespace autoreg::parallel::detail {

struct Rank {
  pid_t pid = -1;
  int out = -1;  // read end of its stdout+stderr
  std::string partial;
  std::deque<std::string> last;  // its last lines
  bool running = false;
  int status = 0;
  bool killed_by_us = false;
  char state = 0;  // /proc state when killed by us: T stopped, S sleeping, ...
  nlohmann::json report;  // its failure report, if it wrote one
  int64_t step = -1;
};

bool failed(const Rank& r);

// The failure of an attempt in which some rank failed: first one a restart cannot help,
// then out of memory (`oom_killed`: the cgroup's OOM kill count rose), a rank killed by a
// signal that was not the supervisor's, a rank that did not answer while its peers timed
// out (hung or stopped), a rank that failed by itself; `exit_code`: the command's.
Failure diagnose(const std::vector<Rank>& ranks, bool oom_killed, int* exit_code);

}  // namespace autoreg::parallel::detail
