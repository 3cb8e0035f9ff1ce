#include "autoreg/runs/run_loop.h"

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
#include "autoreg/runs/run_log.h"
#include "autoreg/registration/train.h"

namespace autoreg::pipeline {
namespace {

volatile std::sig_atomic_t g_stop = 0;
extern "C" void on_stop_signal(int signal) { g_stop = signal; }

using Clock = std::chrono::steady_clock;


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

  std::string progress(double validation) const override {
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

base::Schema<ModelRunSettings> model_run_schema(const std::string& log_help) {
  using S = ModelRunSettings;
  return {base::text_field<S>("cache", "cache", "DIR", "folder for preprocessed volumes (default <out>.cache)", &S::cache),
          base::text_field<S>("log", "log", "FILE", log_help + " (default <out>.log.jsonl)", &S::log),
          base::device_field<S>("where to run", &S::device),
          threads_field<S>("CPU threads (default: all)", &S::threads),
          base::whole_field<S>("seed", "seed", "S", "random seed", &S::seed, 0, std::numeric_limits<int64_t>::max()),
          base::switch_field<S>("resume", "resume", "continue from <out>.ckpt (same options)", &S::resume)};
}

base::Schema<parallel::ScaleOut> scale_out_schema() {
  using S = parallel::ScaleOut;
  base::Schema<S> rows{
      base::whole_field<S>("nproc", "nproc", "N",
                           "run N data-parallel ranks on this machine, supervised (each with --threads threads; default: one process)",
                           &S::nproc, 1),
      base::whole_field<S>("max_restarts", "max-restarts", "R",
                           "with --nproc: restart the ranks from the last checkpoint after a failure, up to R times",
                           &S::max_restarts, 0),
      base::number_field<S>("collective_timeout", "collective-timeout", "S",
                            "seconds a rank waits for the others in a collective before it is a failure (a hung rank)",
                            &S::collective_timeout_s)};
  rows[0].written_back = rows[1].written_back = false;
  rows[0].get = [](const S& s) { return s.nproc > 0 ? std::to_string(s.nproc) : std::string(); };
  return rows;
}

namespace {

// One run of the loop: its clock, log, validation and progress line.
class Loop {
 public:
  Loop(LoopedRun& looped, const RunLoop& loop)
      : looped_(looped), run_(looped.run()), loop_(loop), lead_(run_.rank() == 0), first_(run_.steps_done()),
        logged_(first_), rollbacks_(run_.rollbacks()), evaluations_(loop.evaluations, first_),
        steps_(loop.steps > 0 ? loop.steps : std::numeric_limits<int64_t>::max()) {
    if (lead_) {
      log_.open(loop.log, first_ > 0 ? std::ios::app : std::ios::trunc);
      if (!log_) throw io::IoError(loop.log + ": cannot write the run's log");
    }
  }

  RunOutcome run() {
    Decision decided = decide();
    while (!done(run_.steps_done(), decided.seconds)) {
      parallel::inject_failure(run_.steps_done() + 1, run_.rank());  // tests (worker.h)
      LoopStep r = looped_.step(decided.seconds);
      parallel::report_step(r.step);
      if (lead_) after_rollback(r);
      rollbacks_ = r.rollbacks;
      logged_ = r.step;
      decided = decide();
      const bool last = done(r.step, decided.seconds);
      if (lead_) validate(r, last);
      r.line["seconds"] = decided.seconds;
      if (checkpoint_seconds_ >= 0) r.line["checkpoint_seconds"] = checkpoint_seconds_;  // the stepping thread's share
      checkpoint_seconds_ = -1;
      if (lead_) log_ << r.line.dump() << "\n" << std::flush;
      if (r.step % loop_.checkpoint_every == 0 || last) {
        const auto before = Clock::now();
        checkpoint(decided.seconds);
        checkpoint_seconds_ = std::chrono::duration<double>(Clock::now() - before).count();
      }
      if (lead_) progress(r, last, decided.seconds);
      if (last) break;
      if (decided.stop) {
        checkpoint(decided.seconds);
        run_.finish_checkpoints();
        const std::string name = looped_.name();
        throw base::Interrupted("interrupted" + (name.empty() ? "" : " (" + name + ")") + " at step " +
                                std::to_string(r.step) + ": checkpoint " + loop_.checkpoint +
                                " written; continue with --resume");
      }
    }
    run_.finish_checkpoints();
    return {validation_, loop_.earlier_seconds + elapsed(), elapsed()};
  }

 private:
  struct Decision {
    double seconds;  // the run's time, all runs (rank 0's)
    bool stop;
  };

  double elapsed() const { return std::chrono::duration<double>(Clock::now() - started_).count(); }

  // Data-parallel, the ranks decide together after each step, in one collective (their
  // clocks and signals differ): rank 0's clock is the budget's (a search's schedule
  // follows it: the same phase and temperature on every rank), and a stop asked for on
  // any rank stops them all. Alone, the stop is read at the end of the step.
  Decision decide() const {
    const double mine = loop_.earlier_seconds + elapsed();
    registration::Collective* const collective = run_.collective();
    if (!collective) return {mine, stop_requested()};
    std::vector<at::Tensor> v{at::tensor({lead_ ? mine : 0.0, stop_requested() ? 1.0 : 0.0}, at::kDouble)};
    collective->sum(v);
    return {v[0][0].item<double>(), v[0][1].item<double>() > 0};
  }

  bool done(int64_t step, double seconds) const {
    return step >= steps_ || (loop_.budget_seconds > 0 && seconds >= loop_.budget_seconds);
  }

  void checkpoint(double seconds) {
    if (loop_.before_checkpoint) loop_.before_checkpoint(seconds);
    run_.save_checkpoint(loop_.checkpoint);
  }

  // A step that rolled back (a non-finite step or a gradient spike) is recorded, and the
  // log forgets the abandoned steps, as a resume would.
  void after_rollback(const LoopStep& r) {
    if (r.rollbacks > rollbacks_ && !loop_.failures.empty()) {
      parallel::append_failure(loop_.failures, parallel::rolled_back(r.step, r.rollbacks, looped_.remedy()));
    }
    if (r.step > logged_) return;
    log_.close();
    cut_log_to(loop_.log, r.step - 1);
    log_.open(loop_.log, std::ios::app);
    std::fprintf(stderr, "%s %ld: rolled back to the last good state with %s (%ld so far)\n", loop_.label.c_str(),
                 long(r.step), looped_.remedy(), long(r.rollbacks));
  }

  // Inline validation at its steps, or what the watcher has evaluated since the last look.
  void validate(LoopStep& r, bool last) {
    if (loop_.validation == Validation::Inline && (r.step % loop_.validate_every == 0 || last)) {
      validation_ = run_.validate();
      if (std::isfinite(validation_)) r.line["validation_dice"] = validation_;
      if (loop_.on_validated) loop_.on_validated(r.step, validation_);
    }
    if (loop_.validation == Validation::Decoupled) {
      if (const auto e = evaluations_.latest()) {
        validation_ = e->dice;
        if (std::isfinite(validation_)) r.line["validation_dice"] = validation_;
        r.line["validated_step"] = e->step;
      }
    }
  }

  void progress(const LoopStep& r, bool last, double seconds) {
    const bool by_steps = loop_.progress_every > 0 && r.step % loop_.progress_every == 0;
    const bool by_time = loop_.progress_seconds > 0 &&
                         std::chrono::duration<double>(Clock::now() - last_line_).count() > loop_.progress_seconds;
    if (!(by_steps || by_time || last || r.step == first_ + 1)) return;
    last_line_ = Clock::now();
    const double per_step = elapsed() / double(std::max<int64_t>(1, r.step - first_));
    double left = loop_.steps > 0 ? per_step * double(loop_.steps - r.step) : 0;
    if (loop_.budget_seconds > 0) {
      const double budget_left = loop_.budget_seconds - seconds;
      left = loop_.steps > 0 ? std::min(left, budget_left) : budget_left;
    }
    const std::string total = loop_.steps > 0 ? "/" + std::to_string(loop_.steps) : "";
    std::fprintf(stderr, "%s %ld%s  %s  %.2f s/step  %s left\n", loop_.label.c_str(), long(r.step), total.c_str(),
                 looped_.progress(validation_).c_str(), per_step, duration(std::max(0.0, left)).c_str());
  }

  LoopedRun& looped_;
  registration::SteppedRun& run_;
  const RunLoop& loop_;
  const bool lead_;
  const int64_t first_;
  int64_t logged_, rollbacks_;  // the last step logged; the rollbacks so far (a step that adds one rolled back)
  parallel::EvaluationFollower evaluations_;  // decoupled validation's results
  const int64_t steps_;
  const Clock::time_point started_ = Clock::now();
  Clock::time_point last_line_ = Clock::now();
  std::ofstream log_;
  double validation_ = std::nan("");
  double checkpoint_seconds_ = -1;  // the last checkpoint's time in this thread, logged with the next step
};

}  // namespace

RunOutcome run_loop(LoopedRun& looped, const RunLoop& loop) { return Loop(looped, loop).run(); }

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
