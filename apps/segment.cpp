// autoreg segment --atlases atlases.csv --target T1 --out labels
//                 [--fusion majority|weighted|jlf] [--patch-radius R] [--search-radius S] [--no-patch-vote]
//                 [--beta B] [--alpha A] [--power P]
//                 [register's registration options: --model, --refine, --iterations, --similarity,
//                  --regularizer, --regularization, --no-affine, --affine-iterations, --seed] [--registered]
//                 [--out-probabilities DIR] [--out-warped-dir DIR [--out-inverse-fields]] [--target-labels FILE]
//                 [--qc qc.png] [--device cpu|cuda] [--threads T] [--json]
//
// Multi-atlas segmentation (autoreg/runs/segment.h): every atlas registered onto the
// target, its labels carried there, the labels fused (autoreg/segmentation/fusion.h).
#include <tclap/CmdLine.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "autoreg/runs/segment_job.h"
#include "common_args.h"
#include "parse.h"
#include "exit_codes.h"
#include "options.h"
#include "registration_args.h"
#include "schema_args.h"

namespace autoreg::apps {

int run_segment(int argc, char** argv) {
  TCLAP::CmdLine cmd("Multi-atlas segmentation: register every atlas (image + label map) onto the target, carry "
                     "its labels there and fuse them (majority vote, locally weighted vote, or joint label "
                     "fusion).", ' ', "0.1");
  const pipeline::SegmentJob defaults;
  const SchemaArgs<pipeline::SegmentJob> options(cmd, pipeline::segment_schema(), defaults);  // its own options
  RegistrationArgs registration_args(cmd);  // how each atlas is registered (the settings table's)
  DeviceArg device(cmd);
  ThreadsArg threads(cmd);
  TCLAP::SwitchArg json("", "json", "print a JSON summary", cmd, false);
  cmd.setExceptionHandling(false);
  parse(cmd, argc, argv);

  pipeline::SegmentJob p = options.settings(defaults);
  if (p.out.empty() && p.out_contours.empty()) {
    throw UsageError("nothing to write: give --out FILE (the fused label map) or, with a DICOM series as --target, "
                     "--out-contours RS.dcm");
  }
  if (!p.label_names.empty() && p.out_contours.empty()) throw UsageError("--label-names names the structures of --out-contours");
  if (!p.qc.empty() && !ends_with_png(p.qc)) throw UsageError("--qc writes a PNG picture: give a name ending in .png");
  refuse_overwrite({&p.out, &p.qc, &p.out_contours}, {&p.target, &p.atlases, &p.target_labels, &p.label_names});
  auto& o = p.options;
  if (!(o.fusion.beta > 0) || !(o.fusion.alpha > 0) || !(o.fusion.power > 0)) {
    throw UsageError("--beta, --alpha and --power must be positive");
  }
  if (p.out_inverse_fields && (p.out_warped_dir.empty() || o.registered)) {
    throw UsageError("--out-inverse-fields needs --out-warped-dir, and atlases to register (not --registered)");
  }
  if (o.registered) {
    for (const TCLAP::Arg* a : registration_args.all()) {
      if (a->isSet()) throw UsageError("--registered fuses atlases already on the target's grid: no --" + a->getName());
    }
  }
  // Each atlas is registered as `register` does, with its defaults but these.
  const pipeline::RegistrationSettings registration = registration_args.settings(device.value());
  o.pair = pair_options_of(registration);
  threads.apply();
  const nlohmann::json summary = pipeline::segment_files(p);
  if (json.getValue()) {
    std::printf("%s\n", summary.dump(2).c_str());
  } else {
    const std::string written = p.out.empty() ? p.out_contours : p.out_contours.empty() ? p.out : p.out + " and " + p.out_contours;
    std::printf("wrote %s (%zu atlases, %s) in %.1f s", written.c_str(), summary["atlases"].size(),
                summary["fusion"].get<std::string>().c_str(), summary["seconds"].get<double>());
    if (summary.contains("dice")) std::printf("; mean Dice %.4f", summary["dice"].get<double>());
    std::printf("\n");
  }
  return kOk;
}

}  // namespace autoreg::apps
