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

#include "autoreg/runs/pack_job.h"
#include "common_args.h"
#include "parse.h"
#include "exit_codes.h"
#include "options.h"
#include "schema_args.h"

namespace autoreg::apps {

int run_pack(int argc, char** argv) {
  TCLAP::CmdLine cmd("Preprocess a dataset manifest onto the model grid (as train does) and write it as one training "
                     "set file, for training or searching where ITK is not installed (a GPU machine).", ' ', "0.1");
  const SchemaArgs<pipeline::PackJob> options(cmd, pipeline::pack_schema(), pipeline::PackJob{});
  ThreadsArg threads(cmd);
  cmd.setExceptionHandling(false);
  parse(cmd, argc, argv);

  pipeline::PackJob job = options.settings(pipeline::PackJob{});
  refuse_overwrite({&job.out}, {&job.manifest});
  job.progress = [](const std::string& line) { std::fprintf(stderr, "preprocess: %s\n", line.c_str()); };
  threads.apply();
  const pipeline::PackResult r = pipeline::pack(job);
  std::fprintf(stderr, "wrote %s: %zu training, %zu validation subjects%s on %ldx%ldx%ld at %g mm (%.1f MB)\n",
               job.out.c_str(), r.train, r.validation, r.atlas ? " and an atlas" : "", long(r.grid[0]), long(r.grid[1]),
               long(r.grid[2]), r.spacing, double(r.bytes) / 1e6);
  return kOk;
}

}  // namespace autoreg::apps
