#include "validation_process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "autoreg/base/atomic_file.h"
#include "autoreg/io/volume.h"
#include "autoreg/parallel/process.h"
#include "autoreg/runs/executable.h"

namespace autoreg::pipeline {

namespace fs = std::filesystem;

ValidationProcess::ValidationProcess(const ValidationRun& run) : results_(run.out + ".validation.jsonl") {
  if (run.fresh) {
    std::error_code ec;
    fs::remove(results_, ec);
    fs::remove(run.out + ".best.ckpt", ec);
    fs::remove(run.out + ".best.autoreg", ec);
  }
  std::vector<std::string> command = run.command;
  if (command.empty()) {
    const nlohmann::json description = {
        {"manifest", fs::absolute(run.manifest).string()}, {"cache", fs::absolute(run.cache).string()},
        {"similarity", registration::similarity_name(run.similarity)}, {"size_multiple", run.size_multiple}, {"max_unreadable", run.max_unreadable},
        {"seed", run.seed}};
    const std::string path = run.out + ".run.json";
    try {
      base::write_file_atomically(path, description.dump(2) + "\n");
    } catch (const base::WriteError&) {
      throw io::IoError(path + ": cannot write the run description");
    }
    command = {"validate", "--run", run.out, "--device", run.device};
  }
  command.insert(command.begin(), run.executable.empty() ? autoreg_executable() : run.executable);
  command.insert(command.end(), {"--threads", std::to_string(run.threads)});
  // Not a rank: none of the launcher's variables; dies with this process.
  pid_ = parallel::spawn_process(
      command, {{"AUTOREG_SUPERVISOR_PID", std::to_string(getpid())}, {"OMP_NUM_THREADS", std::to_string(run.threads)}},
      {"AUTOREG_WORKER_STATUS", "RANK", "WORLD_SIZE", "LOCAL_RANK", "AUTOREG_INJECT_FAILURE"}, -1,
      /*hold_stop_signals=*/true);  // a run shorter than the watcher's start still gets its last checkpoint evaluated
}

ValidationProcess::~ValidationProcess() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

std::vector<parallel::EvaluatedStep> ValidationProcess::finish() {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  return parallel::read_evaluations(results_, -1);
}

std::unique_ptr<ValidationProcess> start_validation(const ValidationRun& run, Validation mode, bool lead,
                                                    bool has_pairs, RunLoop& loop) {
  std::unique_ptr<ValidationProcess> watcher;
  if (lead && mode == Validation::Decoupled && has_pairs) watcher = std::make_unique<ValidationProcess>(run);
  loop.validation = watcher ? Validation::Decoupled : mode == Validation::Inline ? Validation::Inline : Validation::Off;
  loop.evaluations = watcher ? watcher->results() : "";
  return watcher;
}

}  // namespace autoreg::pipeline
