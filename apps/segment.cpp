// autoreg segment --atlases atlases.csv --target T1 --out labels
//                 [--fusion majority|weighted|jlf] [--patch-radius R] [--search-radius S] [--no-patch-vote]
//                 [--beta B] [--alpha A] [--power P]
//                 [register's registration options: --model, --refine, --iterations, --similarity,
//                  --regularizer, --regularization, --no-affine, --affine-iterations, --seed] [--registered]
//                 [--out-probabilities DIR] [--out-warped-dir DIR [--out-inverse-fields]] [--target-labels FILE]
//                 [--qc qc.png] [--device cpu|cuda] [--threads T] [--json]
//
// Multi-atlas segmentation (autoreg/pipeline/segment.h): every atlas registered onto the
// target, its labels carried there, the labels fused (autoreg/segmentation/fusion.h).
#include <tclap/CmdLine.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "autoreg/pipeline/segment_job.h"
#include "common_args.h"
#include "parse.h"
#include "exit_codes.h"
#include "options.h"
#include "registration_args.h"

namespace autoreg::apps {

int run_segment(int argc, char** argv) {
  TCLAP::CmdLine cmd("Multi-atlas segmentation: register every atlas (image + label map) onto the target, carry "
                     "its labels there and fuse them (majority vote, locally weighted vote, or joint label "
                     "fusion).", ' ', "0.1");
  TCLAP::ValueArg<std::string> atlases("", "atlases", "CSV manifest of the atlases: columns image,labels (paths relative to it)", true, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> target("", "target", "the image to segment", true, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> out("", "out", "the fused label map (on the target's grid)", false, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> out_contours("", "out-contours", "with a DICOM series as --target (its folder): the fused labels as a new RT Structure Set on it, each label a structure (named by --label-names)", false, "", "RS.dcm", cmd);
  TCLAP::ValueArg<std::string> label_names("", "label-names", "with --out-contours: a table label,name[,red,green,blue] naming the structures (the labels it does not name are left out; without it: label N)", false, "", "FILE.csv", cmd);
  Choices methods(segmentation::kMethodNames);
  TCLAP::ValueArg<std::string> fusion("", "fusion", "majority, weighted (locally weighted vote) or jlf (joint label fusion, default)", false, "jlf", &methods.allowed, cmd);
  TCLAP::ValueArg<int> patch_radius("", "patch-radius", "weighted, jlf: patches of (2R+1)³ voxels (default 2)", false, 2, "R", cmd);
  TCLAP::ValueArg<int> search_radius("", "search-radius", "weighted, jlf: read each atlas where its patch best matches the target's within ±S voxels (local search, as ANTs' -s; default 3; 0: none)", false, 3, "S", cmd);
  TCLAP::SwitchArg no_patch_vote("", "no-patch-vote", "weighted, jlf: each voxel's weights vote for its own labels only (by default every patch votes for all of its voxels, as ANTs' joint fusion)", cmd, false);
  TCLAP::ValueArg<double> beta("", "beta", "jlf: exponent of the error correlations (default 2)", false, 2, "B", cmd);
  TCLAP::ValueArg<double> alpha("", "alpha", "jlf: added to the correlation matrix's diagonal (default 0.01)", false, 0.01, "A", cmd);
  TCLAP::ValueArg<double> power("", "power", "weighted: weight = (local mean squared difference)^-P (default 2)", false, 2, "P", cmd);
  TCLAP::SwitchArg registered("", "registered", "the atlases are on the target's grid already (registered by another run or tool): fuse only", cmd, false);
  TCLAP::ValueArg<std::string> out_probabilities("", "out-probabilities", "folder for each label's fused probability (label_<value>.nii.gz)", false, "", "DIR", cmd);
  TCLAP::ValueArg<std::string> out_warped_dir("", "out-warped-dir", "folder for every atlas's image and labels on the target's grid, with an atlases.csv that --registered reads", false, "", "DIR", cmd);
  TCLAP::SwitchArg out_inverse_fields("", "out-inverse-fields", "with --out-warped-dir: every atlas's inverse field there too (atlasNN_<name>_inverse_field.nii.gz, on the atlas's grid): the target carried onto the atlas", cmd, false);
  TCLAP::ValueArg<std::string> target_labels("", "target-labels", "the target's own label map: report every atlas's and the fusion's mean Dice", false, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> qc("", "qc", "a picture to check the result (PNG): the fused labels' outlines on the target, beside the mean of the warped atlases, in three orthogonal slices", false, "", "FILE.png", cmd);
  RegistrationArgs registration_args(cmd);
  DeviceArg device(cmd);
  ThreadsArg threads(cmd);
  TCLAP::SwitchArg json("", "json", "print a JSON summary", cmd, false);
  cmd.setExceptionHandling(false);
  parse(cmd, argc, argv);

  pipeline::SegmentJob p;
  p.atlases = atlases.getValue();
  p.target = target.getValue();
  p.out = out.getValue();
  p.out_probabilities = out_probabilities.getValue();
  p.out_warped_dir = out_warped_dir.getValue();
  p.target_labels = target_labels.getValue();
  p.qc = qc.getValue();
  p.out_contours = out_contours.getValue();
  p.label_names = label_names.getValue();
  if (p.out.empty() && p.out_contours.empty()) {
    throw UsageError("nothing to write: give --out FILE (the fused label map) or, with a DICOM series as --target, "
                     "--out-contours RS.dcm");
  }
  if (!p.label_names.empty() && p.out_contours.empty()) throw UsageError("--label-names names the structures of --out-contours");
  if (!p.qc.empty() && !ends_with_png(p.qc)) throw UsageError("--qc writes a PNG picture: give a name ending in .png");
  refuse_overwrite({&p.out, &p.qc, &p.out_contours}, {&p.target, &p.atlases, &p.target_labels, &p.label_names});
  auto& o = p.options;
  o.fusion.method = segmentation::parse_method(fusion.getValue());
  if (patch_radius.getValue() < 0 || patch_radius.getValue() > 8) throw UsageError("--patch-radius must be 0-8");
  if (!(beta.getValue() > 0) || !(alpha.getValue() > 0) || !(power.getValue() > 0)) {
    throw UsageError("--beta, --alpha and --power must be positive");
  }
  o.fusion.patch_radius = patch_radius.getValue();
  if (search_radius.getValue() < 0 || search_radius.getValue() > 4) throw UsageError("--search-radius must be 0-4");
  o.fusion.search_radius = search_radius.getValue();
  o.fusion.patch_vote = !no_patch_vote.getValue();
  o.fusion.beta = beta.getValue();
  o.fusion.alpha = alpha.getValue();
  o.fusion.power = power.getValue();
  o.fusion.keep_weights = !p.out_probabilities.empty();
  o.registered = registered.getValue();
  const bool inverse = out_inverse_fields.getValue();
  if (inverse && (p.out_warped_dir.empty() || o.registered)) {
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
  o.pair.inverse = inverse;
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
