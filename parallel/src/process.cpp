#include "autoreg/parallel/process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace autoreg::parallel {

std::string this_executable() {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) throw std::runtime_error("cannot find this executable (/proc/self/exe)");
  return std::string(path, size_t(n));
}

pid_t spawn_process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& set,
                    const std::vector<std::string>& drop, int output, bool hold_stop_signals) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = kv.substr(0, eq);
    if (std::find(drop.begin(), drop.end(), key) == drop.end()) env[key] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : set) env[k] = v;
  std::vector<std::string> words = argv, pairs;
  for (const auto& [k, v] : env) pairs.push_back(k + "=" + v);
  std::vector<char*> args, envp;
  for (auto& w : words) args.push_back(w.data());
  args.push_back(nullptr);
  for (auto& p : pairs) envp.push_back(p.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  if (output >= 0) {
    posix_spawn_file_actions_adddup2(&actions, output, 1);
    posix_spawn_file_actions_adddup2(&actions, output, 2);
  }
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  if (hold_stop_signals) {
    sigset_t held;
    sigemptyset(&held);
    sigaddset(&held, SIGINT);
    sigaddset(&held, SIGTERM);
    posix_spawnattr_setsigmask(&attributes, &held);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK);
  }
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, args[0], &actions, &attributes, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (rc != 0) throw std::runtime_error(argv[0] + ": cannot start it: " + std::strerror(rc));
  return pid;
}

void release_stop_signals() {
  sigset_t held;
  sigemptyset(&held);
  sigaddset(&held, SIGINT);
  sigaddset(&held, SIGTERM);
  sigprocmask(SIG_UNBLOCK, &held, nullptr);
}

}  // namespace autoreg::parallel
