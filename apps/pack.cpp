// autoreg pack --manifest M --out set.trainset [--grid DxHxW] [--spacing MM] [--unet]
//              [--cache DIR] [--max-unreadable F] [--threads T]
//
// Preprocesses a manifest's train, val and atlas rows as `train` does (aligned to the
// reference, sampled onto the model grid, normalised; cached) and writes them as one
// training set file (registration/training_set_file.h) that needs neither ITK nor the
// source volumes to read: what a GPU machine without ITK trains and searches on
// (scripts/device-check.sh). Test rows are left out.
#include <tclap/CmdLine.h>

#include <cstdio>
#include <string>

#include "autoreg/pipeline/pack_job.h"
#include "common_args.h"
#include "parse.h"
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
  parse(cmd, argc, argv);

  pipeline::PackJob job;
  job.manifest = manifest.getValue();
  job.out = out.getValue();
  refuse_overwrite({&job.out}, {&job.manifest});
  if (grid.isSet()) job.grid = parse_grid(grid.getValue());
  job.spacing = spacing.getValue();
  job.unet = unet.getValue();
  job.cache = cache.getValue();
  job.max_unreadable = max_unreadable.getValue();
  job.progress = [](const std::string& line) { std::fprintf(stderr, "preprocess: %s\n", line.c_str()); };
  threads.apply();
  const pipeline::PackResult r = pipeline::pack(job);
  std::fprintf(stderr, "wrote %s: %zu training, %zu validation subjects%s on %ldx%ldx%ld at %g mm (%.1f MB)\n",
               job.out.c_str(), r.train, r.validation, r.atlas ? " and an atlas" : "", long(r.grid[0]), long(r.grid[1]),
               long(r.grid[2]), r.spacing, double(r.bytes) / 1e6);
  return kOk;
}

}  // namespace autoreg::apps
