// Where this process stands among the processes of one data-parallel run, read from the
// environment the usual launchers set: torchrun (RANK, WORLD_SIZE, LOCAL_RANK,
// MASTER_ADDR, MASTER_PORT, TORCHELASTIC_*), Slurm's srun (SLURM_PROCID, SLURM_NTASKS,
// SLURM_LOCALID, when RANK is not set) and autoreg's own `--nproc` supervisor (which sets
// torchrun's variables).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace autoreg::parallel {

struct Rendezvous {
  int rank = 0, world = 1, local_rank = 0;
  std::string master_addr = "127.0.0.1";  // where rank 0 (or torchrun's agent) serves the store
  int master_port = 29500;
  // torchrun's elastic agent serves the store itself (TORCHELASTIC_USE_AGENT_STORE=True).
  bool agent_store = false;
  // How many times the launcher restarted this run's workers (TORCHELASTIC_RESTART_COUNT,
  // or the supervisor's): > 0 resumes from the checkpoint.
  int restart_count = 0;
  std::string source;  // which variables it came from, for messages: "torchrun", "slurm", ...
};

// The rendezvous the environment describes, or none for a single process (no
// WORLD_SIZE, or WORLD_SIZE 1 and no rank; SLURM_NTASKS absent or 1). Throws
// std::invalid_argument naming the variable when one is malformed or missing (RANK
// without WORLD_SIZE, a rank outside the world, Slurm without MASTER_ADDR).
// `env`: the variables (tests); by default the process's.
std::optional<Rendezvous> rendezvous_from_environment(const std::map<std::string, std::string>* env = nullptr);

// How many times the launcher restarted this run (TORCHELASTIC_RESTART_COUNT; 0 when
// unset), whatever the number of ranks. Throws std::invalid_argument when malformed.
int restart_count_from_environment(const std::map<std::string, std::string>* env = nullptr);

// A free TCP port on the loopback interface (for a local launcher's store).
int free_local_port();

}  // namespace autoreg::parallel
