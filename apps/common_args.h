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
#include "autoreg/base/schema.h"
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
// file or a voxel-index list refer to (apply and evaluate nest these rows).
struct PointIndex {
  std::string grid;   // the image whose voxels index the points; "": none
  int64_t base = -1;  // a voxel-index list's first index, 0 or 1; -1: the file's own
  bool is_set() const { return !grid.empty() || base >= 0; }
  // The options for io::read_points (reads the grid's header).
  io::PointFileOptions options() const {
    io::PointFileOptions o;
    if (base >= 0) o.index_base = int(base);
    if (!grid.empty()) o.grid = io::read_geometry(grid);
    return o;
  }
};

inline base::Schema<PointIndex> point_index_schema() {
  using P = PointIndex;
  return {base::text_field<P>("points_grid", "points-grid", "IMAGE",
                              "the image whose voxels index the points of an elastix 'index' file or a voxel-index list",
                              &P::grid),
          {"points_index_base", "points-index-base", "0|1", "a voxel-index list's first index: 0 or 1 (DIR-Lab's are 1-based)",
           [](const P& p) { return p.base >= 0 ? std::to_string(p.base) : std::string(); },
           [](P& p, const std::string& t) { p.base = base::whole_number("points-index-base", t, 0, 1); }}};
}

}  // namespace autoreg::apps
