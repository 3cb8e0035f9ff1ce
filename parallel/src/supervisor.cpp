#include "autoreg/parallel/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>
#include <thread>

#include "autoreg/parallel/failure.h"
#include "autoreg/parallel/process.h"
#include "autoreg/parallel/rendezvous.h"
#include "diagnosis.h"

namespace autoreg::parallel {
namespace {

using detail::diagnose;
using detail::failed;
using detail::Rank;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

volatile std::sig_atomic_t g_signal = 0;
extern "C" void on_supervisor_signal(int s) { g_signal = s; }

// After the first rank fails, the others get this long to end by themselves (a killed
// peer makes theirs throw within a fraction of a second); then they are killed.
constexpr double kGraceSeconds = 5;
constexpr size_t kLinesKept = 8;
// Launchers' variables that would confuse the ranks' own (theirs are set afresh).
const std::vector<std::string> kDropped = {"TORCHELASTIC_RUN_ID", "TORCHELASTIC_USE_AGENT_STORE", "SLURM_PROCID",
                                           "SLURM_NTASKS", "SLURM_LOCALID", "GROUP_RANK", "ROLE_RANK"};

char process_state(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), {});
  const size_t close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() ? text[close + 2] : '?';
}

class Attempt {
 public:
  Attempt(const SupervisorOptions& o, const std::string& folder, int restart) : o_(o), folder_(folder) {
    const int port = free_local_port();
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    const int threads = o.threads > 0 ? o.threads : std::max(1, int(cores) / o.nproc);
    ranks_.resize(size_t(o.nproc));
    for (int k = 0; k < o.nproc; ++k) {
      std::map<std::string, std::string> env;
      env["RANK"] = env["LOCAL_RANK"] = std::to_string(k);
      env["WORLD_SIZE"] = env["LOCAL_WORLD_SIZE"] = std::to_string(o.nproc);
      env["MASTER_ADDR"] = "127.0.0.1";
      env["MASTER_PORT"] = std::to_string(port);
      env["OMP_NUM_THREADS"] = std::to_string(threads);
      env["TORCHELASTIC_RESTART_COUNT"] = std::to_string(restart);
      env["AUTOREG_WORKER_STATUS"] = folder + "/rank-" + std::to_string(k);
      env["AUTOREG_SUPERVISOR_PID"] = std::to_string(getpid());
      start(ranks_[size_t(k)], env);
    }
  }

  // Forwards output and reaps ranks until all have ended; ends the others once one fails.
  void watch() {
    std::optional<Clock::time_point> first_failure;
    bool forwarded = false;
    while (std::any_of(ranks_.begin(), ranks_.end(), [](const Rank& r) { return r.running || r.out >= 0; })) {
      pump(100);
      for (Rank& r : ranks_) {
        if (!r.running) continue;
        int status = 0;
        if (waitpid(r.pid, &status, WNOHANG) == r.pid) {
          r.running = false;
          r.status = status;
          if (failed(r) && !first_failure) first_failure = Clock::now();
        }
      }
      if (g_signal && !forwarded) {
        for (Rank& r : ranks_) {
          if (r.running) kill(r.pid, SIGTERM);
        }
        forwarded = true;
      }
      if (first_failure && !g_signal) {
        const bool grace_over = Clock::now() - *first_failure > std::chrono::duration<double>(kGraceSeconds);
        for (Rank& r : ranks_) {
          if (!r.running || r.killed_by_us) continue;
          const char state = process_state(r.pid);
          if (grace_over || state == 'T' || state == 't') {
            r.state = state;
            r.killed_by_us = true;
            kill(r.pid, SIGKILL);
          }
        }
      }
    }
    for (size_t k = 0; k < ranks_.size(); ++k) read_status(ranks_[k], int(k));
  }

  const std::vector<Rank>& ranks() const { return ranks_; }

 private:
  void start(Rank& r, const std::map<std::string, std::string>& env) {
    int pipe_fds[2];
    if (pipe2(pipe_fds, O_CLOEXEC) != 0) throw std::runtime_error("cannot make a pipe for a rank's output");
    try {
      r.pid = spawn_process(o_.command, env, kDropped, pipe_fds[1]);
    } catch (...) {
      ::close(pipe_fds[0]);
      ::close(pipe_fds[1]);
      throw;
    }
    ::close(pipe_fds[1]);
    r.out = pipe_fds[0];
    r.running = true;
  }

  // Reads what the ranks wrote (waiting up to `ms`), forwarding whole lines.
  void pump(int ms) {
    std::vector<pollfd> fds;
    std::vector<size_t> who;
    for (size_t k = 0; k < ranks_.size(); ++k) {
      if (ranks_[k].out >= 0) {
        fds.push_back({ranks_[k].out, POLLIN, 0});
        who.push_back(k);
      }
    }
    if (fds.empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      return;
    }
    if (poll(fds.data(), fds.size(), ms) <= 0) return;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Rank& r = ranks_[who[i]];
      char buffer[4096];
      const ssize_t n = ::read(r.out, buffer, sizeof buffer);
      if (n <= 0) {
        ::close(r.out);
        r.out = -1;
        if (!r.partial.empty()) line(r, who[i], r.partial);
        r.partial.clear();
        continue;
      }
      r.partial.append(buffer, size_t(n));
      for (size_t nl; (nl = r.partial.find('\n')) != std::string::npos;) {
        line(r, who[i], r.partial.substr(0, nl));
        r.partial.erase(0, nl + 1);
      }
    }
  }

  void line(Rank& r, size_t k, const std::string& text) {
    if (k == 0) {
      std::fprintf(stderr, "%s\n", text.c_str());
    } else {
      std::fprintf(stderr, "[rank %zu] %s\n", k, text.c_str());
    }
    r.last.push_back(text);
    if (r.last.size() > kLinesKept) r.last.pop_front();
  }

  void read_status(Rank& r, int k) const {
    const std::string base = folder_ + "/rank-" + std::to_string(k);
    std::ifstream step(base + ".step", std::ios::binary);
    int64_t s = -1;
    if (step.read(reinterpret_cast<char*>(&s), sizeof s)) r.step = s;
    std::ifstream report(base + ".failure.json");
    if (report) {
      try {
        report >> r.report;
        if (r.report.contains("step") && r.report["step"].is_number_integer()) {
          r.step = std::max(r.step, r.report["step"].get<int64_t>());
        }
      } catch (const std::exception&) {
        r.report = nlohmann::json();
      }
    }
  }

  const SupervisorOptions& o_;
  std::string folder_;
  std::vector<Rank> ranks_;
};

}  // namespace

int supervise(const SupervisorOptions& o) {
  if (o.nproc < 1) throw std::invalid_argument("--nproc must be at least 1");
  if (o.command.empty()) throw std::invalid_argument("no command to supervise");
  std::signal(SIGINT, on_supervisor_signal);
  std::signal(SIGTERM, on_supervisor_signal);
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/autoreg-supervisor-XXXXXX";
  if (!mkdtemp(pattern.data())) throw std::runtime_error(pattern + ": cannot make the supervisor's folder");
  const std::string folder = pattern;
  struct Cleanup {
    std::string folder;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(folder, ec);
    }
  } cleanup{folder};

  std::string last_class;
  int same = 0;
  int64_t last_step = -1;
  for (int restart = 0;; ++restart) {
    for (const auto& entry : fs::directory_iterator(folder)) fs::remove(entry.path());
    const int64_t oom_before = oom_kill_count();
    Attempt attempt(o, folder, restart);
    attempt.watch();
    const auto& ranks = attempt.ranks();
    if (std::none_of(ranks.begin(), ranks.end(), failed)) return 0;
    if (g_signal) {
      const Rank& r0 = ranks[0];
      return WIFEXITED(r0.status) ? WEXITSTATUS(r0.status) : 4;
    }
    int code = 3;
    const int64_t oom_after = oom_kill_count();
    Failure f = diagnose(ranks, oom_before >= 0 && oom_after > oom_before, &code);
    // In a row: the same class with no step done in between (a run that keeps moving
    // between failures is not failing the same way forever; --max-restarts bounds it).
    same = f.cls == last_class && f.step <= last_step ? same + 1 : 1;
    last_class = f.cls;
    last_step = std::max(last_step, f.step);
    std::string stop;
    if (!restartable(f.cls)) {
      stop = "stop: a restart would fail the same way";
    } else if (restart >= o.max_restarts) {
      stop = o.max_restarts == 0 ? "stop: no restarts allowed (--max-restarts 0)"
                                 : "stop: all " + std::to_string(o.max_restarts) + " restarts used";
    } else if (same >= o.max_same_failure) {
      stop = "stop: " + f.cls + " " + std::to_string(same) + " times in a row";
    }
    f.action = stop.empty() ? "restart " + std::to_string(restart + 1) + " of " + std::to_string(o.max_restarts) +
                                  " from the last checkpoint"
                            : stop;
    if (!o.failures.empty()) {
      try {
        append_failure(o.failures, f);
      } catch (const std::exception& e) {  // e.g. a run that failed before making its folder: said below all the same
        std::fprintf(stderr, "%s: %s\n", o.label.c_str(), e.what());
      }
    }
    std::fprintf(stderr, "%s: %s at step %lld (%s): %s\n", o.label.c_str(), f.cls.c_str(), (long long)f.step,
                 f.evidence.c_str(), f.action.c_str());
    if (!stop.empty()) return code == 0 ? 3 : code;
  }
}

}  // namespace autoreg::parallel
