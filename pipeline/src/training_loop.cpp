#include "autoreg/pipeline/training_loop.h"

#include <ATen/ATen.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "autoreg/io/volume.h"
#include "autoreg/parallel/evaluation.h"
#include "autoreg/parallel/failure.h"
#include "autoreg/parallel/worker.h"
#include "autoreg/base/errors.h"
#include "autoreg/pipeline/run_log.h"

namespace autoreg::pipeline {
namespace {

volatile std::sig_atomic_t g_stop = 0;
extern "C" void on_stop_signal(int signal) { g_stop = signal; }

}  // namespace

void install_stop_handlers() {
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
}

bool stop_requested() { return g_stop != 0; }

const char* to_string(Validation v) {
  return v == Validation::Decoupled ? "decoupled" : v == Validation::Inline ? "inline" : "off";
}

Validation parse_validation(const std::string& name) {
  for (Validation v : {Validation::Decoupled, Validation::Inline, Validation::Off}) {
    if (name == to_string(v)) return v;
  }
  throw base::UsageError("--validation: decoupled, inline or off, not '" + name + "'");
}

TrainingOutcome run_training(registration::Trainer& trainer, const TrainingLoop& loop) {
  const bool lead = trainer.rank() == 0;
  std::ofstream log;
  if (lead) {
    log.open(loop.log, trainer.step() > 0 ? std::ios::app : std::ios::trunc);
    if (!log) throw io::IoError(loop.log + ": cannot write the training log");
  }
  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - started).count(); };
  const auto out_of_time = [&] { return loop.budget_seconds > 0 && loop.earlier_seconds + elapsed() >= loop.budget_seconds; };
  // Data-parallel, the ranks decide together after each step, in one collective (their
  // clocks and signals differ): rank 0's clock says when time is up, and a stop asked for
  // on any rank stops them all. Alone, as before: the stop is read at the end of the step.
  registration::Collective* const collective = trainer.collective();
  struct Decision {
    bool time_up, stop;
  };
  const auto decide = [&]() -> Decision {
    if (!collective) return {out_of_time(), false};
    std::vector<at::Tensor> flags{at::tensor({lead && out_of_time() ? 1 : 0, stop_requested() ? 1 : 0}, at::kInt)};
    collective->sum(flags);
    return {flags[0][0].item<int>() > 0, flags[0][1].item<int>() > 0};
  };
  const int64_t first = trainer.step();
  double validation = std::nan("");
  int64_t logged = first;
  int64_t rollbacks = trainer.rollbacks();  // so far: a step that adds one rolled back
  parallel::EvaluationFollower evaluations(loop.evaluations, first);  // decoupled validation's results
  double checkpoint_seconds = -1;  // the last checkpoint's time in this thread, logged with the next step
  bool time_up = decide().time_up;
  while (trainer.step() < loop.steps && !time_up) {
    parallel::inject_failure(trainer.step() + 1, trainer.rank());  // tests (worker.h)
    const registration::StepReport r = trainer.train_step();
    parallel::report_step(r.step);
    if (lead && r.rollbacks > rollbacks && !loop.failures.empty()) {
      parallel::append_failure(loop.failures, parallel::rolled_back(r.step, r.rollbacks, "a smaller learning rate"));
    }
    if (lead && r.step <= logged) {
      // A rollback (a gradient spike) went back to an earlier state: the log forgets the
      // abandoned steps, as a resume would.
      log.close();
      cut_log_to(loop.log, r.step - 1);
      log.open(loop.log, std::ios::app);
      std::fprintf(stderr, "%s %ld: rolled back to the last good state at half the learning rate (%ld so far)\n",
                   loop.label.c_str(), long(r.step), long(r.rollbacks));
    }
    rollbacks = r.rollbacks;
    logged = r.step;
    const Decision decided = decide();
    time_up = decided.time_up;
    const bool last = r.step == loop.steps || time_up;
    nlohmann::json line = {{"step", r.step}, {"loss", r.loss}, {"similarity", r.similarity},
                           {"smoothness", r.smoothness}, {"dice_loss", r.dice}, {"gradient_norm", r.gradient_norm},
                           {"rollbacks", r.rollbacks}};
    if (collective) line["allreduce_seconds"] = r.seconds_allreduce;
    if (lead && loop.validation == Validation::Inline && (r.step % loop.validate_every == 0 || last)) {
      validation = trainer.validate();
      if (std::isfinite(validation)) line["validation_dice"] = validation;
      if (loop.on_validated) loop.on_validated(r.step, validation);
    }
    if (lead && loop.validation == Validation::Decoupled) {
      // What the watcher has evaluated since the last look.
      if (const auto e = evaluations.latest()) {
        validation = e->dice;
        if (std::isfinite(validation)) line["validation_dice"] = validation;
        line["validated_step"] = e->step;
      }
    }
    const double per_step = elapsed() / double(r.step - first);
    line["seconds"] = loop.earlier_seconds + elapsed();
    if (checkpoint_seconds >= 0) line["checkpoint_seconds"] = checkpoint_seconds;  // the training thread's share
    checkpoint_seconds = -1;
    if (lead) log << line.dump() << "\n" << std::flush;
    if (r.step % loop.checkpoint_every == 0 || last) {
      const auto before = Clock::now();
      trainer.save_checkpoint(loop.checkpoint);
      checkpoint_seconds = std::chrono::duration<double>(Clock::now() - before).count();
    }
    if (lead && (r.step % 10 == 0 || last || r.step == first + 1)) {
      const double left = loop.budget_seconds > 0
                              ? std::min(loop.budget_seconds - loop.earlier_seconds - elapsed(),
                                         per_step * double(loop.steps - r.step))
                              : per_step * double(loop.steps - r.step);
      const std::string total = loop.budget_seconds > 0 && loop.steps > (int64_t(1) << 40) ? "" : "/" + std::to_string(loop.steps);
      std::fprintf(stderr, "%s %ld%s  loss %.4f (similarity %.4f, smoothness %.4f, dice %.4f)  validation Dice %s  %.2f s/step  %s left\n",
                   loop.label.c_str(), long(r.step), total.c_str(), r.loss, r.similarity, r.smoothness, r.dice,
                   std::isfinite(validation) ? std::to_string(validation).substr(0, 5).c_str() : "-", per_step,
                   duration(std::max(0.0, left)).c_str());
    }
    const bool stop = collective ? decided.stop : stop_requested();
    if (stop && !last) {
      trainer.save_checkpoint(loop.checkpoint);
      trainer.finish_checkpoints();
      throw base::Interrupted("interrupted at step " + std::to_string(r.step) + ": checkpoint " + loop.checkpoint +
                        " written; continue with --resume");
    }
  }
  trainer.finish_checkpoints();
  // Nothing left to run (a finished run resumed): the model's Dice all the same.
  if (lead && loop.validation == Validation::Inline && trainer.step() == first) validation = trainer.validate();
  return {validation, loop.earlier_seconds + elapsed(), elapsed()};
}

}  // namespace autoreg::pipeline
