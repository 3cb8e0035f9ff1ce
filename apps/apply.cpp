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
#include <string>

#include <nlohmann/json.hpp>

#include "autoreg/ops.h"
#include "autoreg/pair/apply_job.h"
#include "common_args.h"
#include "parse.h"
#include "print_contours.h"
#include "exit_codes.h"
#include "options.h"
#include "schema_args.h"

namespace autoreg::apps {
namespace {

// How the moving volume is sampled: its one name table (ops has no base/ to name it).
constexpr base::NameTable<ops::Interpolation, 2> kInterpolationNames{
    "--interpolation", {{{ops::Interpolation::Linear, "linear"}, {ops::Interpolation::Nearest, "nearest"}}}};

// What `apply` is given: an image, points or a structure set to carry through a field.
struct ApplyCommand {
  std::string field, moving, reference, out, points;
  PointIndex point_index;
  ops::Interpolation interpolation = ops::Interpolation::Linear;
  std::string moving_orientation, contours, fixed_contours, qc;
  bool json = false;
};

base::Schema<ApplyCommand> apply_schema() {
  using C = ApplyCommand;
  base::Schema<C> rows{
      base::text_field<C>("field", "field", "FILE",
                          "displacement field (ITK vector image or .h5 DisplacementFieldTransform), or an affine (.tfm, "
                          ".txt, .mat)",
                          &C::field, true),
      base::text_field<C>("moving", "moving", "FILE", "image or label map to warp", &C::moving),
      base::text_field<C>("reference", "reference", "FILE",
                          "fixed image: the output grid; default: the displacement field's own grid (an affine carries no "
                          "grid: give it)",
                          &C::reference),
      base::text_field<C>("out", "out", "FILE",
                          "warped output (with --points: the moved points, in LPS mm, in the format its name says)", &C::out,
                          true),
      base::text_field<C>("points", "points", "FILE",
                          "instead of --moving: points of the fixed image (.csv LPS as ANTs, elastix .txt/.pts, .vtk, "
                          "Slicer .fcsv/.mrk.json, a voxel-index list) to carry into the moving image",
                          &C::points)};
  for (const auto& row : point_index_schema()) rows.push_back(base::nested_row(row, &C::point_index));
  base::Schema<C> rest{
      base::choice_field<C>("interpolation", "interpolation", "linear (images) or nearest (label maps)", kInterpolationNames,
                            &C::interpolation),
      pipeline::orientation_field<C>(
          "moving_orientation", "moving-orientation",
          "override a wrong header: where the moving volume's voxel axes point, e.g. LIA (as given to register)",
          &C::moving_orientation),
      base::text_field<C>("contours", "contours", "RS.dcm",
                          "instead of an image: an RT Structure Set drawn on the moving DICOM series (--moving: its "
                          "folder), carried through the field onto the series --reference (its folder, the field's grid) "
                          "and written there as a new RT Structure Set (--out RS.dcm)",
                          &C::contours),
      base::text_field<C>("fixed_contours", "fixed-contours", "RS.dcm",
                          "with --contours: the reference series' own RT Structure Set; each carried structure's Dice "
                          "against the one of the same name is printed",
                          &C::fixed_contours),
      base::switch_field<C>("json", "json", "with --contours: print the carried structures' summary as JSON", &C::json),
      base::text_field<C>("qc", "qc", "FILE.png",
                          "a picture to check the result (PNG): the reference and the warped volume in three orthogonal "
                          "slices, and the field's log Jacobian",
                          &C::qc)};
  for (auto& row : rest) rows.push_back(std::move(row));
  return rows;
}

int apply_points(const ApplyCommand& c, const SchemaArgs<ApplyCommand>& given) {
  const std::string image_option =
      given.first_given({"moving", "reference", "interpolation", "moving-orientation", "qc", "fixed-contours", "json"});
  if (!image_option.empty()) throw UsageError("--" + image_option + " is for images; --points moves points");
  pipeline::ApplyPointsJob job{c.field, c.points, c.out, c.point_index.options()};
  refuse_overwrite({&job.out}, {&job.field, &job.points});
  pipeline::apply_points_files(job);
  std::printf("wrote %s\n", job.out.c_str());
  return kOk;
}

int apply_contours(const ApplyCommand& c, const SchemaArgs<ApplyCommand>& given) {
  const std::string image_option = given.first_given({"interpolation", "moving-orientation", "qc", "points"});
  if (!image_option.empty()) throw UsageError("--" + image_option + " is for images; --contours carries a structure set");
  if (c.point_index.is_set()) throw UsageError("--points-grid and --points-index-base go with --points");
  if (c.moving.empty() || c.reference.empty()) {
    throw UsageError("--contours needs --moving (the DICOM series folder it is drawn on) and --reference (the series "
                     "folder to carry it onto)");
  }
  pipeline::ApplyContoursJob job{c.field, c.contours, c.moving, c.reference, c.out, c.fixed_contours};
  refuse_overwrite({&job.out}, {&job.field, &job.contours, &job.fixed_contours});
  const nlohmann::json summary = pipeline::apply_contours_files(job);
  if (c.json) {
    std::printf("%s\n", summary.dump(2).c_str());
  } else {
    print_contours(summary);
  }
  return kOk;
}

}  // namespace

int run_apply(int argc, char** argv) {
  TCLAP::CmdLine cmd("Apply a displacement field (physical LPS mm, on the fixed grid, as written "
                     "by autoreg register or ANTs) to an image or a label map.",
                     ' ', "0.1");
  const SchemaArgs<ApplyCommand> options(cmd, apply_schema(), ApplyCommand{});
  cmd.setExceptionHandling(false);
  parse(cmd, argc, argv);
  const ApplyCommand c = options.settings(ApplyCommand{});
  if (options.given("points")) return apply_points(c, options);
  if (options.given("contours")) return apply_contours(c, options);
  if (options.given("fixed-contours") || options.given("json")) {
    throw UsageError(std::string("--") + (options.given("json") ? "json" : "fixed-contours") + " goes with --contours");
  }
  if (c.moving.empty()) throw UsageError("--moving is required (the image or label map to warp), or --points");
  if (!c.qc.empty() && c.reference.empty()) {
    throw UsageError("--qc draws the result beside the fixed image: give it as --reference");
  }
  if (c.point_index.is_set()) throw UsageError("--points-grid and --points-index-base go with --points");
  pipeline::ApplyJob p{c.field, c.moving, c.reference, c.out, c.moving_orientation,
                       c.interpolation == ops::Interpolation::Nearest, c.qc};
  if (!p.qc.empty() && !ends_with_png(p.qc)) throw UsageError("--qc writes a PNG picture: give a name ending in .png");
  refuse_overwrite({&p.out, &p.qc}, {&p.field, &p.moving, &p.reference});
  pipeline::apply_files(p);
  std::printf("wrote %s\n", p.out.c_str());
  return kOk;
}

}  // namespace autoreg::apps
