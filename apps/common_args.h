// The options several subcommands share, declared once: --threads (every subcommand that
// computes) and --device (those that can run on a GPU).
#pragma once

#include <tclap/CmdLine.h>

#include <ATen/Parallel.h>

#include <string>
#include <vector>

namespace autoreg::apps {

struct ThreadsArg {
  // `default_threads` 0: all of the machine's (LibTorch's default).
  explicit ThreadsArg(TCLAP::CmdLine& cmd, int default_threads = 0,
                      const std::string& help = "CPU threads (default: all)")
      : arg("", "threads", help, false, default_threads, "T", cmd) {}
  int value() const { return arg.getValue(); }
  // Sets LibTorch's intra-op threads when a count is given (> 0).
  void apply() const {
    if (arg.getValue() > 0) at::set_num_threads(arg.getValue());
  }
  TCLAP::ValueArg<int> arg;
};

struct DeviceArg {
  explicit DeviceArg(TCLAP::CmdLine& cmd) : arg("", "device", "cpu (default) or cuda", false, "cpu", &allowed, cmd) {}
  const std::string& value() const { return arg.getValue(); }
  std::vector<std::string> names{"cpu", "cuda"};
  TCLAP::ValuesConstraint<std::string> allowed{names};
  TCLAP::ValueArg<std::string> arg;
};

}  // namespace autoreg::apps
