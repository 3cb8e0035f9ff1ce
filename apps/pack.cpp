// autoreg pack --manifest M --out set.trainset [--grid DxHxW] [--spacing MM] [--unet]
//              [--cache DIR] [--max-unreadable F] [--threads T]
//
// Preprocesses a manifest's train, val and atlas rows as `train` does (aligned to the
// reference, sampled onto the model grid, normalised; cached) and writes them as one
// training set file (registration/training_set_file.h) that needs neither ITK nor the
// source volumes to read: what a GPU machine without ITK trains and searches on
// (scripts/device-check.sh). Test rows are left out.
#include <tclap/CmdLine.h>

#include <ATen/Parallel.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "autoreg/io/manifest.h"
#include "autoreg/io/volume.h"
#include "autoreg/pipeline/dataset.h"
#include "autoreg/registration/training_set_file.h"
#include "common_args.h"
#include "exit_codes.h"
#include "options.h"

namespace autoreg::apps {

int run_pack(int argc, char** argv) {
  TCLAP::CmdLine cmd("Preprocess a dataset manifest onto the model grid (as train does) and write it as one training "
                     "set file, for training or searching where ITK is not installed (a GPU machine).", ' ', "0.1");
  TCLAP::ValueArg<std::string> manifest("", "manifest", "CSV manifest (image,labels,split; test rows are left out)", true, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> out("", "out", "the training set file to write", true, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> grid("", "grid", "model grid DxHxW at --spacing (default: the reference's foreground box + 8 mm)", false, "", "DxHxW", cmd);
  TCLAP::ValueArg<double> spacing("", "spacing", "model grid spacing in mm (default 2)", false, 2.0, "MM", cmd);
  TCLAP::SwitchArg unet("", "unet", "for the U-Net (grid sizes multiples of 16, not 4)", cmd, false);
  TCLAP::ValueArg<std::string> cache("", "cache", "folder for preprocessed volumes (default <out>.cache)", false, "", "DIR", cmd);
  TCLAP::ValueArg<double> max_unreadable("", "max-unreadable", "share of rows that may be unreadable (reported and skipped; default 0)", false, 0, "F", cmd);
  ThreadsArg threads(cmd);
  cmd.setExceptionHandling(false);
  cmd.parse(argc, argv);

  const std::string out_path = out.getValue(), manifest_path = manifest.getValue();
  refuse_overwrite({&out_path}, {&manifest_path});
  io::check_output(out_path);
  if (!(spacing.getValue() > 0)) throw UsageError("--spacing must be > 0");
  if (!(max_unreadable.getValue() >= 0 && max_unreadable.getValue() < 1)) throw UsageError("--max-unreadable must be in [0, 1)");
  registration::ModelInfo info;
  info.network.kind = unet.getValue() ? "unet" : "autoreg";
  info.spacing = {spacing.getValue(), spacing.getValue(), spacing.getValue()};
  info.grid = grid.isSet() ? parse_grid(grid.getValue()) : std::array<int64_t, 3>{0, 0, 0};
  const int64_t multiple = unet.getValue() ? 16 : 4;
  for (int64_t size : info.grid) {
    if (size % multiple != 0) {
      throw UsageError("--grid: the " + info.network.kind + " network needs sizes that are multiples of " + std::to_string(multiple));
    }
  }
  threads.apply();

  const io::Manifest rows = io::read_manifest(manifest_path);
  pipeline::DatasetOptions dataset;
  dataset.cache_dir = cache.isSet() ? cache.getValue() : out_path + ".cache";
  dataset.max_unreadable_fraction = max_unreadable.getValue();
  dataset.progress = [](const std::string& line) { std::fprintf(stderr, "preprocess: %s\n", line.c_str()); };
  registration::TrainingSet data;
  try {
    data = pipeline::load_training_set(rows, info, multiple, dataset);
  } catch (const std::invalid_argument& e) {
    throw io::IoError(e.what());
  }
  try {
    registration::write_training_set(out_path, data, info);
  } catch (const std::invalid_argument& e) {
    throw io::IoError(manifest_path + ": " + e.what());
  }
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(out_path, ec);
  std::fprintf(stderr, "wrote %s: %zu training, %zu validation subjects%s on %ldx%ldx%ld at %g mm (%.1f MB)\n",
               out_path.c_str(), data.train.size(), data.validation.size(), data.atlas ? " and an atlas" : "",
               long(info.grid[0]), long(info.grid[1]), long(info.grid[2]), info.spacing[0], ec ? 0.0 : double(bytes) / 1e6);
  return kOk;
}

}  // namespace autoreg::apps
