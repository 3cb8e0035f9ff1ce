#include "autoreg/pipeline/run_loop.h"

#include <ATen/ATen.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <limits>

#include "autoreg/base/errors.h"
#include "autoreg/io/volume.h"
#include "autoreg/parallel/evaluation.h"
#include "autoreg/parallel/failure.h"
#include "autoreg/parallel/worker.h"
#include "autoreg/pipeline/run_log.h"
#include "autoreg/registration/train.h"

namespace autoreg::pipeline {
namespace {

volatile std::sig_atomic_t g_stop = 0;
extern "C" void on_stop_signal(int signal) { g_stop = signal; }

using Clock = std::chrono::steady_clock;

std::string dice_text(double v) { return std::isfinite(v) ? std::to_string(v).substr(0, 5) : "-"; }

// A Trainer's steps as the loop logs them.
class TrainingRun : public LoopedRun {
 public:
  explicit TrainingRun(registration::Trainer& trainer) : LoopedRun(trainer), trainer_(trainer) {}

  LoopStep step(double) override {
    const registration::StepReport r = trainer_.train_step();
    last_ = r;
    LoopStep s{r.step, r.rollbacks,
               {{"step", r.step}, {"loss", r.loss}, {"similarity", r.similarity}, {"smoothness", r.smoothness},
                {"dice_loss", r.dice}, {"gradient_norm", r.gradient_norm}, {"rollbacks", r.rollbacks}}};
    if (trainer_.collective()) s.line["allreduce_seconds"] = r.seconds_allreduce;
    return s;
  }

  std::string progress(const LoopStep&, double validation) const override {
    char text[256];
    std::snprintf(text, sizeof text, "loss %.4f (similarity %.4f, smoothness %.4f, dice %.4f)  validation Dice %s",
                  last_.loss, last_.similarity, last_.smoothness, last_.dice, dice_text(validation).c_str());
    return text;
  }

  const char* remedy() const override { return "a smaller learning rate"; }

 private:
  registration::Trainer& trainer_;
  registration::StepReport last_;
};

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

RunOutcome run_loop(LoopedRun& looped, const RunLoop& loop) {
  registration::SteppedRun& run = looped.run();
  const bool lead = run.rank() == 0;
  std::ofstream log;
  if (lead) {
    log.open(loop.log, run.steps_done() > 0 ? std::ios::app : std::ios::trunc);
    if (!log) throw io::IoError(loop.log + ": cannot write the run's log");
  }
  const auto started = Clock::now();
  const auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - started).count(); };
  // Data-parallel, the ranks decide together after each step, in one collective (their
  // clocks and signals differ): rank 0's clock is the budget's (a search's schedule
  // follows it: the same phase and temperature on every rank), and a stop asked for on
  // any rank stops them all. Alone, the stop is read at the end of the step.
  registration::Collective* const collective = run.collective();
  struct Decision {
    double seconds;  // the run's time, all runs (rank 0's)
    bool stop;
  };
  const auto decide = [&]() -> Decision {
    const double mine = loop.earlier_seconds + elapsed();
    if (!collective) return {mine, stop_requested()};
    std::vector<at::Tensor> v{at::tensor({lead ? mine : 0.0, stop_requested() ? 1.0 : 0.0}, at::kDouble)};
    collective->sum(v);
    return {v[0][0].item<double>(), v[0][1].item<double>() > 0};
  };
  const int64_t steps = loop.steps > 0 ? loop.steps : std::numeric_limits<int64_t>::max();
  const auto done = [&](int64_t step, double seconds) {
    return step >= steps || (loop.budget_seconds > 0 && seconds >= loop.budget_seconds);
  };
  const auto checkpoint = [&](double seconds) {
    if (loop.before_checkpoint) loop.before_checkpoint(seconds);
    run.save_checkpoint(loop.checkpoint);
  };
  const int64_t first = run.steps_done();
  double validation = std::nan("");
  int64_t logged = first;
  int64_t rollbacks = run.rollbacks();  // so far: a step that adds one rolled back
  parallel::EvaluationFollower evaluations(loop.evaluations, first);  // decoupled validation's results
  const bool decoupled = loop.validation == Validation::Decoupled && !loop.evaluations.empty();
  double checkpoint_seconds = -1;  // the last checkpoint's time in this thread, logged with the next step
  auto last_line = Clock::now();
  Decision decided = decide();
  while (!done(run.steps_done(), decided.seconds)) {
    parallel::inject_failure(run.steps_done() + 1, run.rank());  // tests (worker.h)
    LoopStep r = looped.step(decided.seconds);
    parallel::report_step(r.step);
    if (lead && r.rollbacks > rollbacks && !loop.failures.empty()) {
      parallel::append_failure(loop.failures, parallel::rolled_back(r.step, r.rollbacks, looped.remedy()));
    }
    if (lead && r.step <= logged) {
      // A rollback (a non-finite step or a gradient spike) went back to an earlier state:
      // the log forgets the abandoned steps, as a resume would.
      log.close();
      cut_log_to(loop.log, r.step - 1);
      log.open(loop.log, std::ios::app);
      std::fprintf(stderr, "%s %ld: rolled back to the last good state with %s (%ld so far)\n", loop.label.c_str(),
                   long(r.step), looped.remedy(), long(r.rollbacks));
    }
    rollbacks = r.rollbacks;
    logged = r.step;
    decided = decide();
    const bool last = done(r.step, decided.seconds);
    nlohmann::json& line = r.line;
    if (lead && loop.validation == Validation::Inline && (r.step % loop.validate_every == 0 || last)) {
      validation = run.validate();
      if (std::isfinite(validation)) line["validation_dice"] = validation;
      if (loop.on_validated) loop.on_validated(r.step, validation);
    }
    if (lead && decoupled) {
      // What the watcher has evaluated since the last look.
      if (const auto e = evaluations.latest()) {
        validation = e->dice;
        if (std::isfinite(validation)) line["validation_dice"] = validation;
        line["validated_step"] = e->step;
      }
    }
    line["seconds"] = decided.seconds;
    if (checkpoint_seconds >= 0) line["checkpoint_seconds"] = checkpoint_seconds;  // the stepping thread's share
    checkpoint_seconds = -1;
    if (lead) log << line.dump() << "\n" << std::flush;
    if (r.step % loop.checkpoint_every == 0 || last) {
      const auto before = Clock::now();
      checkpoint(decided.seconds);
      checkpoint_seconds = std::chrono::duration<double>(Clock::now() - before).count();
    }
    const bool by_steps = loop.progress_every > 0 && r.step % loop.progress_every == 0;
    const bool by_time =
        loop.progress_seconds > 0 && std::chrono::duration<double>(Clock::now() - last_line).count() > loop.progress_seconds;
    if (lead && (by_steps || by_time || last || r.step == first + 1)) {
      last_line = Clock::now();
      const double per_step = elapsed() / double(std::max<int64_t>(1, r.step - first));
      double left = loop.steps > 0 ? per_step * double(loop.steps - r.step) : 0;
      if (loop.budget_seconds > 0) {
        const double budget_left = loop.budget_seconds - decided.seconds;
        left = loop.steps > 0 ? std::min(left, budget_left) : budget_left;
      }
      const std::string total = loop.steps > 0 && loop.steps < (int64_t(1) << 40) ? "/" + std::to_string(loop.steps) : "";
      std::fprintf(stderr, "%s %ld%s  %s  %.2f s/step  %s left\n", loop.label.c_str(), long(r.step), total.c_str(),
                   looped.progress(r, validation).c_str(), per_step, duration(std::max(0.0, left)).c_str());
    }
    if (last) break;
    if (decided.stop) {
      checkpoint(decided.seconds);
      run.finish_checkpoints();
      const std::string name = looped.name();
      throw base::Interrupted("interrupted" + (name.empty() ? "" : " (" + name + ")") + " at step " +
                              std::to_string(r.step) + ": checkpoint " + loop.checkpoint +
                              " written; continue with --resume");
    }
  }
  run.finish_checkpoints();
  return {validation, loop.earlier_seconds + elapsed(), elapsed()};
}

RunOutcome run_training(registration::Trainer& trainer, const RunLoop& loop) {
  TrainingRun run(trainer);
  const int64_t first = trainer.steps_done();
  RunOutcome outcome = run_loop(run, loop);
  // Nothing left to run (a finished run resumed): the model's Dice all the same.
  if (trainer.rank() == 0 && loop.validation == Validation::Inline && trainer.steps_done() == first) {
    outcome.validation_dice = trainer.validate();
  }
  return outcome;
}

}  // namespace autoreg::pipeline
