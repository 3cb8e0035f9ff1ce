// The options `train` and `search` share for running on many processes (README, "Many
// processes, GPUs and nodes"), and what they do with them: under `--nproc N` this
// process becomes the supervisor of N ranks of the same command (parallel/supervisor.h);
// started by torchrun, srun or that supervisor, it joins the others (parallel/
// process_group.h). The work itself is parallel/'s; this is the command line's side.
#pragma once

#include <tclap/CmdLine.h>

#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autoreg/parallel/rendezvous.h"
#include "autoreg/registration/collective.h"

namespace autoreg::apps {

struct ScaleOutArgs {
  explicit ScaleOutArgs(TCLAP::CmdLine& cmd);
  TCLAP::ValueArg<int> nproc;
  TCLAP::ValueArg<int> max_restarts;
  TCLAP::ValueArg<double> collective_timeout;
};

// A subcommand's arguments (argv[1..]) without the options named (each with its value,
// "--name V" or "--name=V").
std::vector<std::string> arguments_without(int argc, char** argv, const std::vector<std::string>& options);

// Under --nproc: runs the ranks (argv without --nproc) and returns the command's exit
// code; nothing otherwise. `failures`: the run's failures file.
std::optional<int> supervise_if_asked(const ScaleOutArgs& args, int argc, char** argv, const std::string& subcommand,
                                      int threads, const std::string& failures);

// A rank of a distributed run when the environment says so (torchrun, srun, --nproc).
struct Distributed {
  std::optional<parallel::Rendezvous> rendezvous;
  std::unique_ptr<registration::Collective> collective;
  int rank() const { return rendezvous ? rendezvous->rank : 0; }
  int world() const { return rendezvous ? rendezvous->world : 1; }
  bool lead() const { return rank() == 0; }
  // Restarted by its launcher (TORCHELASTIC_RESTART_COUNT > 0, one process or many):
  // resume from the checkpoint (when there is one).
  int restart_count = 0;
  bool restarted() const { return restart_count > 0; }
};

// Under another launcher (torchrun, srun: no autoreg supervisor to diagnose it), a rank
// that ends with `e` writes its own diagnosis line to `failures` (exit_code: what the
// command exits with); then the caller rethrows. Does nothing for a single process or
// under --nproc.
void diagnose_own_failure(const Distributed& d, const std::exception& e, int exit_code, const std::string& failures);

// Rank 0 runs `work` first (preprocessing into a cache, measuring what the others then
// read) while the other ranks wait at a barrier; then they run it. A failure on rank 0
// reaches every rank: rank 0 rethrows it, the others stop with a message saying so,
// instead of waiting at the barrier for its 2 hours. Alone: just `work`.
void lead_first(registration::Collective* collective, bool lead, const std::function<void()>& work);

// Reads the environment (a UsageError when it is malformed) and, if it names a rank,
// connects it to the others (collective-timeout: --collective-timeout; the rendezvous
// waits up to 5 minutes for every rank).
Distributed join_if_distributed(const ScaleOutArgs& args, const std::string& device);

}  // namespace autoreg::apps
