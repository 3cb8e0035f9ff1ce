// A job's side of running on many processes (docs/distributed.md): the ranks' settings,
// joining the others when a launcher (torchrun, srun, `autoreg ... --nproc`) started this
// process as a rank, the lead rank preparing what the others then read, and a rank's own
// failure diagnosis where no autoreg supervisor diagnoses it. The supervisor itself
// (--nproc) is supervisor.h; it starts the command line a job's settings write.
#pragma once

#include <exception>
#include <functional>
#include <stdexcept>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autoreg/parallel/rendezvous.h"
#include "autoreg/parallel/scale_out.h"
#include "autoreg/registration/collective.h"

namespace autoreg::parallel {

// The ranks a supervisor ran ended with a non-zero exit code (the supervisor's messages
// and the failures file say why): a command exits with `code`.
class RanksFailed : public std::runtime_error {
 public:
  RanksFailed(int code, const std::string& what) : std::runtime_error(what), code(code) {}
  int code;
};

// Runs a job under a supervisor of s.nproc ranks (s.nproc > 0, settings validated) of
// `command` (the executable first, no --nproc; parallel/supervisor.h): returns when they
// succeeded, throws RanksFailed when not. `failures`: the run's failures file; `label`:
// the messages' first word.
void supervise(const ScaleOut& s, const std::vector<std::string>& command, int threads, const std::string& failures,
               const std::string& label);

// A rank of a distributed run when the environment says so (torchrun, srun, --nproc).
struct Distributed {
  std::optional<Rendezvous> rendezvous;
  std::unique_ptr<registration::Collective> collective;
  int rank() const { return rendezvous ? rendezvous->rank : 0; }
  int world() const { return rendezvous ? rendezvous->world : 1; }
  bool lead() const { return rank() == 0; }
  // Restarted by its launcher (TORCHELASTIC_RESTART_COUNT > 0, one process or many):
  // resume from the checkpoint (when there is one).
  int restart_count = 0;
  bool restarted() const { return restart_count > 0; }
};

// Reads the environment (a UsageError when it is malformed) and, if it names a rank,
// connects it to the others (s.collective_timeout_s for collectives; the rendezvous waits
// up to 5 minutes for every rank).
Distributed join_if_distributed(const ScaleOut& s, const std::string& device);

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

}  // namespace autoreg::parallel
