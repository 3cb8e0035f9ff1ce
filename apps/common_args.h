// The options several subcommands share, declared once: --threads (every subcommand that
// computes), --device (those that can run on a GPU) and how point files index voxels
// (apply and evaluate).
#pragma once

#include <tclap/CmdLine.h>

#include <ATen/Parallel.h>

#include <string>
#include <vector>

#include "autoreg/base/errors.h"
#include "autoreg/base/names.h"
#include "autoreg/io/points.h"
#include "autoreg/io/volume.h"

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

// A choice's names for TCLAP's ValuesConstraint (which keeps a reference to them), from
// the choice's one name table (base/names.h).
struct Choices {
  template <typename Table>
  explicit Choices(const Table& table) : names(table.names()), allowed(names) {}
  std::vector<std::string> names;
  TCLAP::ValuesConstraint<std::string> allowed;
};

struct DeviceArg {
  explicit DeviceArg(TCLAP::CmdLine& cmd) : arg("", "device", "cpu (default) or cuda", false, "cpu", &choices.allowed, cmd) {}
  const std::string& value() const { return arg.getValue(); }
  Choices choices{base::kDeviceNames};
  TCLAP::ValueArg<std::string> arg;
};

// --points-grid and --points-index-base: what the voxel indices of an elastix `index`
// file or a voxel-index list refer to.
struct PointIndexArgs {
  explicit PointIndexArgs(TCLAP::CmdLine& cmd)
      : grid("", "points-grid", "the image whose voxels index the points of an elastix 'index' file or a voxel-index list",
             false, "", "IMAGE", cmd),
        base("", "points-index-base", "a voxel-index list's first index: 0 or 1 (DIR-Lab's are 1-based)", false, -1, "0|1",
             cmd) {}
  bool is_set() const { return grid.isSet() || base.isSet(); }
  // The options for io::read_points (UsageError for a base other than 0 or 1; reads the grid's header).
  io::PointFileOptions options() const {
    io::PointFileOptions o;
    if (base.isSet()) {
      if (base.getValue() != 0 && base.getValue() != 1) throw base::UsageError("--points-index-base must be 0 or 1");
      o.index_base = base.getValue();
    }
    if (grid.isSet()) o.grid = io::read_geometry(grid.getValue());
    return o;
  }
  TCLAP::ValueArg<std::string> grid;
  TCLAP::ValueArg<int> base;
};

}  // namespace autoreg::apps
