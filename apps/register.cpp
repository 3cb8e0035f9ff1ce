// autoreg register --fixed F --moving M [--out-warped W] [--out-field D] (at least one output, or --json)
//                  [--moving-labels L --out-labels WL] [--out-affine A.tfm]
//                  [--out-inverse-field DI] [--fixed-labels FL] [--qc qc.png]
//                  [--affine-only | --no-affine] [--similarity ncc|mse|mind]
//                  [--regularizer diffusion|tv] [--regularization λ] [--iterations N1,N2,...] [--affine-iterations N1,N2]
//                  [--fixed-mask FM] [--moving-mask MM] [--rigid]
//                  [--moving-contours RS.dcm [--out-contours RS2.dcm] [--fixed-contours RSF.dcm]]
//                  [--fixed-orientation C] [--moving-orientation C]
//                  [--model FILE|default [--refine K]]
//                  [--device cpu|cuda] [--threads T] [--seed S] [--force] [--json]
//
// Affine pre-alignment in physical space, then a deformable field: a trained model's
// prediction (optionally refined by K steps of instance optimisation), or without a
// model instance optimisation of a diffeomorphic field on the pair
// (autoreg/pipeline/register_pair.h). The moving image and labels are sampled once,
// through the composed map.
#include <tclap/CmdLine.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "autoreg/pipeline/register_job.h"
#include "autoreg/pipeline/register_pair.h"
#include "autoreg/pipeline/register_pairs.h"
#include "common_args.h"
#include "parse.h"
#include "exit_codes.h"
#include "options.h"
#include "print_contours.h"
#include "registration_args.h"

namespace autoreg::apps {
namespace {

// "wrote W, F and L": the outputs asked for, in the order of the options.
std::string written_line(const pipeline::RegisterJob& p) {
  std::vector<std::string> names;
  for (const std::string* out : {&p.out_warped, &p.out_field, &p.out_labels, &p.out_contours, &p.out_affine,
                                 &p.out_inverse_field, &p.qc}) {
    if (!out->empty()) names.push_back(*out);
  }
  if (names.empty()) return "registered (no output file asked for)";
  std::string line = "wrote " + names.front();
  for (size_t i = 1; i < names.size(); ++i) line += (i + 1 == names.size() ? " and " : ", ") + names[i];
  return line;
}

}  // namespace

int run_register(int argc, char** argv) {
  TCLAP::CmdLine cmd("Register a moving volume to a fixed one: affine pre-alignment in physical "
                     "space, then a deformable field predicted by a trained network (--model), or "
                     "without a model a diffeomorphic field optimised on the pair (stationary "
                     "velocity, scaling and squaring, coarse to fine).",
                     ' ', "0.1");
  TCLAP::ValueArg<std::string> fixed("", "fixed", "fixed image", false, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> moving("", "moving", "moving image", false, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> out_warped("", "out-warped", "moving image on the fixed grid; a name ending in / (with a DICOM series as --fixed): a new CT series in that folder, on the fixed series' geometry and frame of reference, in HU", false, "", "FILE|DIR/", cmd);
  TCLAP::ValueArg<std::string> out_field("", "out-field", "displacement field, affine and deformable together (LPS mm, fixed grid; .h5: ITK DisplacementFieldTransform)", false, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> fixed_labels("", "fixed-labels", "the fixed image's label map: the summary reports the warped labels' mean Dice over its labels", false, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> fixed_points("", "fixed-points", "landmarks of the fixed image (.csv LPS as ANTs, elastix .txt/.pts, .vtk, Slicer .fcsv/.mrk.json): with --moving-points, the summary reports their TRE (mm) after registration", false, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> moving_points("", "moving-points", "the same landmarks, in the same order, in the moving image", false, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> fixed_mask("", "fixed-mask", "a mask of the fixed image (non-zero inside, on its grid): only the voxels inside it are compared (cost-function masking, as ANTs -x), in the affine, instance optimisation and --refine; the field covers the whole grid", false, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> moving_mask("", "moving-mask", "a mask of the moving image (on its grid): only fixed voxels whose match lies inside it are compared", false, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> pairs("", "pairs", "many pairs in one run: a CSV with columns fixed,moving and optionally moving_labels,fixed_labels,fixed_points,moving_points,fixed_mask,moving_mask,moving_contours,fixed_contours (instead of --fixed/--moving/--out-*)", false, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> out_dir("", "out-dir", "with --pairs: the output folder (outputs named after the inputs, summary.csv, summary.json)", false, "", "DIR", cmd);
  TCLAP::SwitchArg resume("", "resume", "with --pairs: skip the pairs whose outputs are complete", cmd, false);
  TCLAP::ValueArg<std::string> shard("", "shard", "with --pairs: register only shard K of N (rows i with i % N = K-1), writing summary.shard-K-of-N.csv/.json; default: a Slurm array's or Kubernetes indexed Job's index", false, "", "K/N", cmd);
  TCLAP::SwitchArg merge("", "merge", "with --pairs: write the run's summary files and index.html in --out-dir from its shards' summaries (registers nothing)", cmd, false);
  TCLAP::SwitchArg allow_missing("", "allow-missing", "with --merge: list pairs that no shard registered as missing instead of refusing", cmd, false);
  TCLAP::ValueArg<std::string> moving_labels("", "moving-labels", "moving label map to warp", false, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> out_labels("", "out-labels", "warped label map (of --moving-labels, or of the structures of --moving-contours, each its ROI number, with a table FILE.csv of label, name and colour)", false, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> moving_contours("", "moving-contours", "an RT Structure Set (RTSTRUCT .dcm) drawn on the moving DICOM series (--moving: its folder): its structures are carried onto the fixed series; --out-contours writes them", false, "", "RS.dcm", cmd);
  TCLAP::ValueArg<std::string> fixed_contours("", "fixed-contours", "the RT Structure Set drawn on the fixed DICOM series: the summary reports each carried structure's Dice against the one of the same name (or the same but for its last _ part)", false, "", "RS.dcm", cmd);
  TCLAP::ValueArg<std::string> out_contours("", "out-contours", "with --moving-contours: a new RT Structure Set on the fixed DICOM series (--fixed: its folder), the structures carried by the registration", false, "", "RS.dcm", cmd);
  TCLAP::ValueArg<std::string> out_affine("", "out-affine", "the affine alone, as an ITK transform file (.tfm, .txt, .mat, .h5)", false, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> out_inverse_field("", "out-inverse-field", "the inverse map, on the moving grid (LPS mm, like --out-field): the velocities integrated backwards and the affine inverted; `autoreg apply` carries fixed-grid images onto the moving grid with it", false, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> qc("", "qc", "a picture to check the result (PNG): three orthogonal slices of the fixed image, the warped moving one, their checkerboard, the warped labels' outlines, the log Jacobian; with --pairs every pair gets one and index.html lists them worst first", false, "", "FILE.png", cmd);
  TCLAP::SwitchArg inverse("", "inverse", "with --pairs: write each pair's inverse field too", cmd, false);
  const pipeline::SettingRow& deformable_row = pipeline::setting_row("deformable");  // the command's own switch
  TCLAP::SwitchArg affine_only("", deformable_row.option, deformable_row.help, cmd, false);
  RegistrationArgs registration(cmd);
  DeviceArg device(cmd);
  ThreadsArg threads(cmd);
  TCLAP::ValueArg<std::string> fixed_orientation("", "fixed-orientation", "override a wrong header: where the fixed image's voxel axes point, e.g. LIA", false, "", "CODE", cmd);
  TCLAP::ValueArg<std::string> moving_orientation("", "moving-orientation", "override a wrong header: where the moving image's (and labels') voxel axes point, e.g. LIA", false, "", "CODE", cmd);
  TCLAP::SwitchArg force("", "force", "resample a label map or mask that is not on its image's grid (nearest neighbour)", cmd, false);
  TCLAP::SwitchArg json("", "json", "print a JSON summary", cmd, false);
  TCLAP::SwitchArg strict("", "strict", "exit with code 6 when a failure check warns (the result worse than the start on what both scans show, an affine beyond the preset's limits, folding over 1 %); the outputs are written either way; with --pairs, when it warns on any pair that did not fail (failures give 5 first)", cmd, false);
  cmd.setExceptionHandling(false);
  parse(cmd, argc, argv);

  pipeline::RegisterJob p;
  p.fixed = fixed.getValue();
  p.moving = moving.getValue();
  p.out_warped = out_warped.getValue();
  p.out_field = out_field.getValue();
  p.moving_labels = moving_labels.getValue();
  p.out_labels = out_labels.getValue();
  p.out_affine = out_affine.getValue();
  p.fixed_labels = fixed_labels.getValue();
  p.fixed_points = fixed_points.getValue();
  p.moving_points = moving_points.getValue();
  p.fixed_mask = fixed_mask.getValue();
  p.moving_mask = moving_mask.getValue();
  p.out_inverse_field = out_inverse_field.getValue();
  p.moving_contours = moving_contours.getValue();
  p.fixed_contours = fixed_contours.getValue();
  p.out_contours = out_contours.getValue();
  p.qc = qc.getValue();
  if (!p.qc.empty() && !ends_with_png(p.qc)) throw UsageError("--qc writes a PNG picture: give a name ending in .png");
  const bool batch = pairs.isSet();
  if (batch) {
    for (const auto* a : std::initializer_list<const TCLAP::Arg*>{&fixed, &moving, &out_warped, &out_field, &moving_labels,
                                                                   &out_labels, &out_affine, &fixed_labels, &out_inverse_field, &qc,
                                                                   &fixed_points, &moving_points, &fixed_mask, &moving_mask,
                                                                   &moving_contours, &fixed_contours, &out_contours}) {
      if (a->isSet()) throw UsageError("--pairs lists the pairs; --" + a->getName() + " is for one pair");
    }
    if (!out_dir.isSet()) throw UsageError("--pairs needs --out-dir");
    if (merge.isSet() && (shard.isSet() || resume.isSet())) {
      throw UsageError("--merge joins the shards' summaries; --shard and --resume are for registering");
    }
    if (allow_missing.isSet() && !merge.isSet()) throw UsageError("--allow-missing goes with --merge");
  } else {
    for (const auto* a : std::initializer_list<const TCLAP::Arg*>{&out_dir, &resume, &inverse, &shard, &merge, &allow_missing}) {
      if (a->isSet()) throw UsageError("--" + a->getName() + " goes with --pairs");
    }
    for (const auto* a : std::initializer_list<const TCLAP::Arg*>{&fixed, &moving}) {
      if (!a->isSet()) throw UsageError("--" + a->getName() + " is required (or --pairs for many pairs)");
    }
    // Any one output will do: only the warped image, only the labels, only the summary.
    const std::initializer_list<const TCLAP::Arg*> outputs{&out_warped, &out_field, &out_labels, &out_contours,
                                                           &out_affine, &out_inverse_field, &qc, &json};
    if (std::none_of(outputs.begin(), outputs.end(), [](const TCLAP::Arg* a) { return a->isSet(); })) {
      throw UsageError("nothing to write: give --out-warped FILE (the moving image on the fixed grid), --out-field FILE "
                       "(the displacement field), --out-labels, --out-contours, --out-affine, --out-inverse-field, "
                       "--qc or --json (the summary only)");
    }
    if (!p.moving_labels.empty() && p.out_labels.empty()) throw UsageError("--moving-labels and --out-labels go together");
    if (!p.out_labels.empty() && p.moving_labels.empty() && p.moving_contours.empty()) {
      throw UsageError("--out-labels writes the warped --moving-labels, or the structures of --moving-contours");
    }
    if (p.fixed_points.empty() != p.moving_points.empty()) throw UsageError("--fixed-points and --moving-points go together");
    if (p.moving_contours.empty() && (!p.out_contours.empty() || !p.fixed_contours.empty())) {
      throw UsageError(std::string(p.out_contours.empty() ? "--fixed-contours compares" : "--out-contours writes") +
                       " the structures carried from --moving-contours: give the moving series' RT Structure Set");
    }
    refuse_overwrite({&p.out_warped, &p.out_field, &p.out_labels, &p.out_affine, &p.out_inverse_field, &p.qc, &p.out_contours},
                     {&p.fixed, &p.moving, &p.moving_labels, &p.fixed_labels, &p.fixed_mask, &p.moving_mask,
                      &p.moving_contours, &p.fixed_contours});
  }
  pipeline::RegistrationSettings s = registration.settings(device.value());
  s.deformable = !affine_only.getValue();
  if (batch && merge.getValue()) {
    s.model.clear();  // a merge registers nothing: no model to read
    s.refine = 0;
  }
  // The model's reading counts in the "read" stage.
  pipeline::StageTimes times;
  p.options = pair_options_of(s);
  p.force = force.getValue();
  p.fixed_orientation = checked_orientation("--fixed-orientation", fixed_orientation.getValue());
  p.moving_orientation = checked_orientation("--moving-orientation", moving_orientation.getValue());
  threads.apply();
  if (batch) {
    const pipeline::PairsOutcome r = pipeline::run_pairs(p, {pairs.getValue(), out_dir.getValue(), resume.getValue(), inverse.getValue(), shard.getValue(),
                         merge.getValue(), allow_missing.getValue()});
    if (r.ok()) {
      if (strict.getValue() && r.warned > 0) {
        std::fprintf(stderr, "autoreg register: a failure check warned on %d of %zu pairs (the warnings column of %s)\n",
                     r.warned, r.pairs, r.summary_csv.c_str());
        return kCheckFailed;
      }
      return kOk;
    }
    const std::string and_missing = r.missing ? ", " + std::to_string(r.missing) + " missing" : "";
    std::fprintf(stderr, "autoreg register: %d of %zu pairs failed%s (listed in %s)\n", r.failed, r.pairs,
                 and_missing.c_str(), r.summary_csv.c_str());
    return kSomePairsFailed;
  }
  const nlohmann::json summary = pipeline::register_files(p, times);
  // A failed check is never silent: on stderr always (before the summary), in the exit
  // code with --strict.
  for (const auto& w : summary["warnings"]) {
    std::fprintf(stderr, "warning: %s: %s\n", w["check"].get<std::string>().c_str(), w["message"].get<std::string>().c_str());
  }
  if (json.getValue()) {
    std::printf("%s\n", summary.dump(2).c_str());
  } else {
    // What --preset auto chose (or the preset given), and why (--json: preset_choice).
    const auto& choice = summary["preset_choice"];
    std::printf("preset %s: %s\n", choice["name"].get<std::string>().c_str(), choice["reason"].get<std::string>().c_str());
    std::printf("%s in %.1f s; %.3f %% of voxels fold\n", written_line(p).c_str(), summary["seconds"].get<double>(),
                summary["non_positive_jacobian_percent"].get<double>());
    if (!summary["tre"].is_null()) {
      const auto& t = summary["tre"];
      std::printf("TRE over %zu landmarks: %.2f mm before, %.2f mm after (median %.2f, 95th %.2f, max %.2f)\n",
                  t["points"].get<size_t>(), t["before_mean_mm"].get<double>(), t["mean_mm"].get<double>(),
                  t["median_mm"].get<double>(), t["p95_mm"].get<double>(), t["max_mm"].get<double>());
    }
    if (summary.contains("contours")) print_contours(summary["contours"]);
  }
  if (strict.getValue() && !summary["warnings"].empty()) return kCheckFailed;
  return kOk;
}

}  // namespace autoreg::apps
