// autoreg apply --field D --moving X [--reference R] --out Y [--interpolation linear|nearest]
//               [--qc qc.png]
// autoreg apply --field D --points P --out Q [--points-grid IMG --points-index-base 0|1]
// autoreg apply --field D --contours RS.dcm --moving MOVING_SERIES/ --reference FIXED_SERIES/ --out RS2.dcm
//               [--fixed-contours RSF.dcm] [--json]
//
// Applies a displacement field written by `autoreg register` (or by ANTs: the same
// convention), or an affine ITK transform file, to another image or label map on any
// grid: each reference voxel x takes the moving volume's value at x + d(x) (or A·x), in
// one interpolation. With --points, points of the fixed image move into the moving image:
// x to x + d(x) (or A·x), their order and extra columns kept.
#include <tclap/CmdLine.h>

#include <cstdio>
#include <initializer_list>
#include <string>

#include <nlohmann/json.hpp>

#include "autoreg/pipeline/apply_job.h"
#include "common_args.h"
#include "parse.h"
#include "print_contours.h"
#include "exit_codes.h"
#include "options.h"

namespace autoreg::apps {

int run_apply(int argc, char** argv) {
  TCLAP::CmdLine cmd("Apply a displacement field (physical LPS mm, on the fixed grid, as written "
                     "by autoreg register or ANTs) to an image or a label map.",
                     ' ', "0.1");
  TCLAP::ValueArg<std::string> field("", "field", "displacement field (ITK vector image or .h5 DisplacementFieldTransform), or an affine (.tfm, .txt, .mat)", true, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> moving("", "moving", "image or label map to warp", false, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> reference("", "reference", "fixed image: the output grid; default: the displacement field's own grid (an affine carries no grid: give it)", false, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> out("", "out", "warped output (with --points: the moved points, in LPS mm, in the format its name says)", true, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> points("", "points", "instead of --moving: points of the fixed image (.csv LPS as ANTs, elastix .txt/.pts, .vtk, Slicer .fcsv/.mrk.json, a voxel-index list) to carry into the moving image", false, "", "FILE", cmd);
  PointIndexArgs point_index(cmd);
  std::vector<std::string> modes = {"linear", "nearest"};
  TCLAP::ValuesConstraint<std::string> allowed(modes);
  TCLAP::ValueArg<std::string> interpolation(
      "", "interpolation", "linear (images, default) or nearest (label maps)", false, "linear",
      &allowed, cmd);
  TCLAP::ValueArg<std::string> moving_orientation(
      "", "moving-orientation", "override a wrong header: where the moving volume's voxel axes point, e.g. LIA (as given to register)",
      false, "", "CODE", cmd);
  TCLAP::ValueArg<std::string> contours("", "contours", "instead of an image: an RT Structure Set drawn on the moving DICOM series (--moving: its folder), carried through the field onto the series --reference (its folder, the field's grid) and written there as a new RT Structure Set (--out RS.dcm)", false, "", "RS.dcm", cmd);
  TCLAP::ValueArg<std::string> fixed_contours("", "fixed-contours", "with --contours: the reference series' own RT Structure Set; each carried structure's Dice against the one of the same name is printed", false, "", "RS.dcm", cmd);
  TCLAP::SwitchArg json("", "json", "with --contours: print the carried structures' summary as JSON", cmd, false);
  TCLAP::ValueArg<std::string> qc("", "qc", "a picture to check the result (PNG): the reference and the warped volume in three orthogonal slices, and the field's log Jacobian", false, "", "FILE.png", cmd);
  cmd.setExceptionHandling(false);
  parse(cmd, argc, argv);
  if (points.isSet()) {
    for (const TCLAP::Arg* a : std::initializer_list<const TCLAP::Arg*>{&moving, &reference, &interpolation, &moving_orientation, &qc, &fixed_contours, &json}) {
      if (a->isSet()) throw UsageError("--" + a->getName() + " is for images; --points moves points");
    }
    pipeline::ApplyPointsJob job{field.getValue(), points.getValue(), out.getValue(), point_index.options()};
    refuse_overwrite({&job.out}, {&job.field, &job.points});
    pipeline::apply_points_files(job);
    std::printf("wrote %s\n", job.out.c_str());
    return kOk;
  }
  if (contours.isSet()) {
    for (const TCLAP::Arg* a : std::initializer_list<const TCLAP::Arg*>{&interpolation, &moving_orientation, &qc, &points}) {
      if (a->isSet()) throw UsageError("--" + a->getName() + " is for images; --contours carries a structure set");
    }
    if (point_index.is_set()) throw UsageError("--points-grid and --points-index-base go with --points");
    if (!moving.isSet() || !reference.isSet()) {
      throw UsageError("--contours needs --moving (the DICOM series folder it is drawn on) and --reference (the series "
                       "folder to carry it onto)");
    }
    pipeline::ApplyContoursJob job{field.getValue(), contours.getValue(), moving.getValue(), reference.getValue(),
                                   out.getValue(), fixed_contours.getValue()};
    refuse_overwrite({&job.out}, {&job.field, &job.contours, &job.fixed_contours});
    const nlohmann::json summary = pipeline::apply_contours_files(job);
    if (json.getValue()) {
      std::printf("%s\n", summary.dump(2).c_str());
    } else {
      print_contours(summary);
    }
    return kOk;
  }
  if (fixed_contours.isSet() || json.isSet()) {
    throw UsageError(std::string("--") + (json.isSet() ? "json" : "fixed-contours") + " goes with --contours");
  }
  if (!moving.isSet()) throw UsageError("--moving is required (the image or label map to warp), or --points");
  if (qc.isSet() && !reference.isSet()) {
    throw UsageError("--qc draws the result beside the fixed image: give it as --reference");
  }
  if (point_index.is_set()) throw UsageError("--points-grid and --points-index-base go with --points");

  pipeline::ApplyJob p{field.getValue(), moving.getValue(), reference.getValue(), out.getValue(),
                       checked_orientation("--moving-orientation", moving_orientation.getValue()),
                       interpolation.getValue() == "nearest", qc.getValue()};
  if (!p.qc.empty() && !ends_with_png(p.qc)) throw UsageError("--qc writes a PNG picture: give a name ending in .png");
  refuse_overwrite({&p.out, &p.qc}, {&p.field, &p.moving, &p.reference});
  pipeline::apply_files(p);
  std::printf("wrote %s\n", p.out.c_str());
  return kOk;
}

}  // namespace autoreg::apps
