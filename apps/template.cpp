// autoreg template --images subjects.csv --out DIR [--initial affine-mean|first|FILE]
//                  [--template-iterations N] [--step S] [--averaging mean|median|sharpened] [registration options]
//                  [--threads T] [--resume] [--nproc N [--max-restarts R]]
//
// Group-wise registration: an unbiased template of the listed subjects
// (autoreg/runs/template_job.h, docs/template.md).
#include <tclap/CmdLine.h>

#include <ATen/Parallel.h>

#include <cstdio>
#include <string>

#include "autoreg/runs/template_job.h"
#include "common_args.h"
#include "parse.h"
#include "exit_codes.h"
#include "registration_args.h"
#include "schema_args.h"

namespace autoreg::apps {

int run_template(int argc, char** argv) {
  TCLAP::CmdLine cmd("Build an unbiased template of a cohort: each iteration registers every subject to the "
                     "template, averages the warped subjects and moves the average by the inverse of the mean "
                     "displacement (ANTs' template construction); then registers every subject to the final "
                     "template for its fields and warped image.",
                     ' ', "0.1");
  const pipeline::TemplateSettings defaults;
  const SchemaArgs<pipeline::TemplateSettings> options(cmd, pipeline::template_schema(), defaults);  // its own options
  RegistrationArgs registration(cmd);  // how each subject is registered (the settings table's)
  DeviceArg device(cmd);
  cmd.setExceptionHandling(false);
  parse(cmd, argc, argv);
  check_scale_out(options);
  pipeline::TemplateSettings s = options.settings(defaults);
  s.registration = registration.settings(device.value());
  s.log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  if (s.scale.nproc == 0 && s.threads > 0) at::set_num_threads(s.threads);  // a supervisor's ranks get theirs
  const nlohmann::json summary = pipeline::build_template(s);
  // One line for the run: from rank 0 (alone, or as a launcher's rank; under --nproc the
  // supervisor's rank 0 says it).
  if (s.scale.nproc > 0 || summary.value("rank", 0) != 0) return kOk;
  std::printf("wrote %s/template.nii.gz (%zu subjects, %zu iterations, %.0f s); QC page %s/index.html\n",
              s.out.c_str(), summary["subjects"].get<size_t>(), summary["iterations"].size(),
              summary["seconds"].get<double>(), s.out.c_str());
  return kOk;
}

}  // namespace autoreg::apps
