// autoreg validate --run OUT [--threads T] [--device cpu|cuda]
//
// Evaluation decoupled from training (parallel/evaluation.h): watches the checkpoint of
// the training run writing OUT (OUT.ckpt), evaluates each new one on the run's
// validation subjects (Dice of warped labels, folding), appends a line per checkpoint to
// OUT.validation.jsonl and keeps the best checkpoint as OUT.best.ckpt (and its network
// as the model file OUT.best.autoreg). `train` starts
// it by default; it can also run on its own, e.g. on another machine that shares the
// run's folder. It reads what it needs from OUT.run.json (written by train) and ends
// when the run has written OUT, or at SIGINT/SIGTERM (after the latest checkpoint).
#include <tclap/CmdLine.h>

#include <cstdio>
#include <string>

#include "autoreg/parallel/process.h"
#include "autoreg/parallel/worker.h"
#include "autoreg/runs/run_loop.h"
#include "autoreg/runs/validate_job.h"
#include "common_args.h"
#include "parse.h"
#include "exit_codes.h"

namespace autoreg::apps {

int run_validate(int argc, char** argv) {
  TCLAP::CmdLine cmd("Evaluate a training run's checkpoints as they are written (validation Dice, folding), "
                     "decoupled from the training; keeps the best checkpoint.", ' ', "0.1");
  TCLAP::ValueArg<std::string> run("", "run", "the run's model file (train --out): OUT.ckpt is watched", true, "", "OUT", cmd);
  ThreadsArg threads(cmd, 1, "CPU threads (default 1: the training keeps the rest)");
  DeviceArg device(cmd);
  cmd.setExceptionHandling(false);
  parse(cmd, argc, argv);
  if (threads.value() < 1) throw UsageError("--threads must be at least 1");
  threads.apply();
  parallel::attach_to_supervisor();  // started by train: ends with it
  pipeline::install_stop_handlers();
  parallel::release_stop_signals();  // held by train until now (validation_process.cpp)
  pipeline::validate_checkpoints(run.getValue(), device.value(),
                                 [](const std::string& line) { std::fprintf(stderr, "validate: %s\n", line.c_str()); });
  return kOk;
}

}  // namespace autoreg::apps
