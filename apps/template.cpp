// autoreg template --images subjects.csv --out DIR [--initial affine-mean|first|FILE]
//                  [--template-iterations N] [--step S] [--averaging mean|median|sharpened] [registration options]
//                  [--threads T] [--resume] [--nproc N [--max-restarts R]]
//
// Group-wise registration: an unbiased template of the listed subjects
// (autoreg/pipeline/template_job.h, docs/template.md).
#include <tclap/CmdLine.h>

#include <cstdio>
#include <string>

#include "autoreg/pipeline/template_job.h"
#include "common_args.h"
#include "parse.h"
#include "exit_codes.h"
#include "registration_args.h"
#include "scale_out.h"

namespace autoreg::apps {

int run_template(int argc, char** argv) {
  TCLAP::CmdLine cmd("Build an unbiased template of a cohort: each iteration registers every subject to the "
                     "template, averages the warped subjects and moves the average by the inverse of the mean "
                     "displacement (ANTs' template construction); then registers every subject to the final "
                     "template for its fields and warped image.",
                     ' ', "0.1");
  TCLAP::ValueArg<std::string> images("", "images", "CSV with a column image (and optionally labels: the template gets a label map fused from them), paths relative to it", false, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> out("", "out", "output folder: template.nii.gz, <subject>_field/_inverse/_warped.nii.gz, index.html, the iterations", false, "", "DIR", cmd);
  TCLAP::ValueArg<int> iterations("", "template-iterations", "shape updates of the template (default 4; --iterations sets each registration's levels, as in register)", false, 4, "N", cmd);
  TCLAP::ValueArg<std::string> initial("", "initial", "the template to start from: affine-mean (default: the subjects affinely aligned to the first and averaged), first (the first subject), or an image file", false, "affine-mean", "HOW", cmd);
  TCLAP::ValueArg<double> step("", "step", "shape-update step: the share of the mean displacement the template moves by each iteration (default 0.25, as ANTs' -g)", false, 0.25, "S", cmd);
  Choices averaging_names(pipeline::kAveragingNames);
  TCLAP::ValueArg<std::string> averaging("", "averaging", "how the warped subjects are averaged: mean (default), median, or sharpened (the mean, unsharp-masked)", false, "mean", &averaging_names.allowed, cmd);
  TCLAP::SwitchArg resume("", "resume", "continue from the last iteration's checkpoint in --out", cmd, false);
  RegistrationArgs registration(cmd);
  DeviceArg device(cmd);
  ThreadsArg threads(cmd, 0, "CPU threads of each process (default: all; with --nproc, the cores shared among the ranks)");
  ScaleOutArgs scale(cmd);
  cmd.setExceptionHandling(false);
  parse(cmd, argc, argv);

  pipeline::TemplateSettings s;
  s.images = images.getValue();
  s.out = out.getValue();
  s.iterations = iterations.getValue();
  s.initial = pipeline::parse_initial(initial.getValue());
  s.step = step.getValue();
  s.averaging = pipeline::parse_averaging(averaging.getValue());
  s.resume = resume.getValue();
  s.registration = registration.settings(device.value());
  s.log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  s.threads = threads.value();
  s.scale = scale.settings();
  if (s.scale.nproc == 0) threads.apply();  // a supervisor's ranks get theirs
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
