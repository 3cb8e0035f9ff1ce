// What `autoreg validate` does, as a library job: evaluation decoupled from training
// (parallel/evaluation.h). Watches the checkpoint of the training run writing `run_out`
// (run_out.ckpt), evaluates each new one on the run's validation subjects (Dice of
// warped labels, folding), appends a line per checkpoint to run_out.validation.jsonl and
// keeps the best checkpoint as run_out.best.ckpt (and its network as the model file
// run_out.best.autoreg). It reads what it needs from run_out.run.json (written by
// `train` when it starts) and returns when the run has written run_out, or once
// pipeline::stop_requested() (after the latest checkpoint). io::IoError naming the file
// for a missing or malformed run description.
#pragma once

#include <functional>
#include <string>

namespace autoreg::pipeline {

// `device`: cpu or cuda. `log`: each progress line (stderr on the command line).
void validate_checkpoints(const std::string& run_out, const std::string& device,
                          const std::function<void(const std::string&)>& log);

}  // namespace autoreg::pipeline
