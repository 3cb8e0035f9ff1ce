// What the long runs that end in a model file (train, adapt) share: where the
// preprocessed volumes and the log go, the device, threads, seed and resumption. The
// command line declares them once (apps/run_args.h).
#pragma once

#include <cstdint>
#include <string>

namespace autoreg::pipeline {

struct ModelRunSettings {
  std::string cache;           // preprocessed volumes; "": <out>.cache
  std::string log;             // JSON lines, one per step; "": <out>.log.jsonl
  std::string device = "cpu";  // cpu | cuda
  int threads = 0;             // CPU threads; 0: LibTorch's default (all)
  uint64_t seed = 0;
  bool resume = false;         // continue from <out>.ckpt

  std::string cache_for(const std::string& out) const { return cache.empty() ? out + ".cache" : cache; }
  std::string log_for(const std::string& out) const { return log.empty() ? out + ".log.jsonl" : log; }
};

}  // namespace autoreg::pipeline
