// The options `train` and `adapt` share, the long runs that end in a model file: the
// preprocessing cache, the log, the device, threads, seed and --resume
// (pipeline::ModelRunSettings).
#pragma once

#include <tclap/CmdLine.h>

#include <cstdint>
#include <string>

#include "autoreg/pipeline/run_settings.h"
#include "common_args.h"

namespace autoreg::apps {

struct ModelRunArgs {
  // `log_help`: what the log holds ("JSON-lines training log").
  ModelRunArgs(TCLAP::CmdLine& cmd, const std::string& log_help)
      : cache("", "cache", "folder for preprocessed volumes (default <out>.cache)", false, "", "DIR", cmd),
        log("", "log", log_help + " (default <out>.log.jsonl)", false, "", "FILE", cmd),
        device(cmd),
        threads(cmd),
        seed("", "seed", "random seed (default 0)", false, 0, "S", cmd),
        resume("", "resume", "continue from <out>.ckpt (same options)", cmd, false) {}

  pipeline::ModelRunSettings settings() const {
    pipeline::ModelRunSettings s;
    s.cache = cache.getValue();
    s.log = log.getValue();
    s.device = device.value();
    s.threads = threads.value();
    s.seed = seed.getValue();
    s.resume = resume.getValue();
    return s;
  }

  TCLAP::ValueArg<std::string> cache, log;
  DeviceArg device;
  ThreadsArg threads;
  TCLAP::ValueArg<uint64_t> seed;
  TCLAP::SwitchArg resume;
};

}  // namespace autoreg::apps
