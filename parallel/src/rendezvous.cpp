#include "autoreg/parallel/rendezvous.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

namespace autoreg::parallel {
namespace {

std::optional<std::string> variable(const std::map<std::string, std::string>* env, const std::string& name) {
  if (env) {
    const auto it = env->find(name);
    return it == env->end() ? std::nullopt : std::optional<std::string>(it->second);
  }
  const char* v = std::getenv(name.c_str());
  return v ? std::optional<std::string>(v) : std::nullopt;
}

int integer(const std::string& name, const std::string& text, int low, int high) {
  size_t used = 0;
  long v = 0;
  try {
    v = std::stol(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || v < low || v > high) {
    throw std::invalid_argument("environment: " + name + "=" + text + " is not an integer in [" + std::to_string(low) +
                                ", " + std::to_string(high) + "]");
  }
  return int(v);
}

}  // namespace

std::optional<Rendezvous> rendezvous_from_environment(const std::map<std::string, std::string>* env) {
  const auto get = [&](const std::string& name) { return variable(env, name); };
  Rendezvous r;
  std::string rank_name, world_name, local_name;
  if (get("WORLD_SIZE") || get("RANK")) {
    r.source = get("TORCHELASTIC_RUN_ID") ? "torchrun" : "RANK/WORLD_SIZE";
    rank_name = "RANK", world_name = "WORLD_SIZE", local_name = "LOCAL_RANK";
  } else if (get("SLURM_NTASKS") && get("SLURM_PROCID")) {
    r.source = "slurm";
    rank_name = "SLURM_PROCID", world_name = "SLURM_NTASKS", local_name = "SLURM_LOCALID";
  } else {
    return std::nullopt;
  }
  const auto world = get(world_name), rank = get(rank_name);
  if (!world) throw std::invalid_argument("environment: " + rank_name + " is set but " + world_name + " is not");
  r.world = integer(world_name, *world, 1, 1 << 20);
  if (!rank) {
    if (r.world == 1) return std::nullopt;
    throw std::invalid_argument("environment: " + world_name + "=" + *world + " is set but " + rank_name + " is not");
  }
  r.rank = integer(rank_name, *rank, 0, r.world - 1);
  if (r.world == 1) return std::nullopt;
  if (const auto local = get(local_name)) r.local_rank = integer(local_name, *local, 0, 1 << 20);
  if (const auto addr = get("MASTER_ADDR")) {
    r.master_addr = *addr;
  } else if (r.source == "slurm") {
    throw std::invalid_argument(
        "environment: under Slurm, set MASTER_ADDR to the first node of the job, e.g. "
        "export MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)");
  } else {
    throw std::invalid_argument("environment: " + rank_name + " and " + world_name + " are set but MASTER_ADDR is not");
  }
  if (const auto port = get("MASTER_PORT")) r.master_port = integer("MASTER_PORT", *port, 1, 65535);
  const auto agent = get("TORCHELASTIC_USE_AGENT_STORE");
  r.agent_store = agent && (*agent == "True" || *agent == "true" || *agent == "1");
  r.restart_count = restart_count_from_environment(env);
  return r;
}

int restart_count_from_environment(const std::map<std::string, std::string>* env) {
  const auto restarts = variable(env, "TORCHELASTIC_RESTART_COUNT");
  return restarts ? integer("TORCHELASTIC_RESTART_COUNT", *restarts, 0, 1 << 20) : 0;
}

int free_local_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("cannot open a socket to find a free port");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof address;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  ::close(fd);
  if (!ok) throw std::runtime_error("cannot find a free port on the loopback interface");
  return ntohs(address.sin_port);
}

}  // namespace autoreg::parallel
