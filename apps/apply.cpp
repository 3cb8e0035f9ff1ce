// autoreg apply --field D --moving X --reference R --out Y [--interpolation linear|nearest]
//               [--qc qc.png]
// autoreg apply --field D --points P --out Q [--points-grid IMG --points-index-base 0|1]
//
// Applies a displacement field written by `autoreg register` (or by ANTs: the same
// convention), or an affine ITK transform file, to another image or label map on any
// grid: each reference voxel x takes the moving volume's value at x + d(x) (or A·x), in
// one interpolation. With --points, points of the fixed image move into the moving image:
// x to x + d(x) (or A·x), their order and extra columns kept.
#include <tclap/CmdLine.h>

#include <ATen/ATen.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "autoreg/io/field.h"
#include "autoreg/io/grid.h"
#include "autoreg/io/mapped.h"
#include "autoreg/io/points.h"
#include "autoreg/io/volume.h"
#include "autoreg/io/transform.h"
#include "common_args.h"
#include "exit_codes.h"
#include "options.h"
#include "autoreg/pipeline/qc_picture.h"

namespace autoreg::apps {
namespace {

struct ApplyParams {
  std::string field, moving, reference, out, moving_orientation;
  bool labels = false;  // nearest-neighbour, integer output (for label maps)
  std::string qc;       // optional picture: the reference with the result on it
};

bool is_affine_file(const std::string& path) {
  const std::string ext = std::filesystem::path(path).extension().string();
  return ext == ".tfm" || ext == ".txt" || ext == ".mat";
}

void apply(const ApplyParams& p) {
  io::check_output(p.out);
  if (!p.qc.empty()) io::check_output(p.qc);
  io::Volume reference;
  if (!p.qc.empty()) reference = io::read_volume(p.reference);
  const io::Geometry grid = p.qc.empty() ? io::read_geometry(p.reference) : reference.geometry;
  at::Tensor affine, u;
  if (is_affine_file(p.field)) {
    affine = io::read_affine(p.field);
  } else {
    io::Geometry field_grid;
    u = io::read_displacement_field(p.field, &field_grid);
    if (!io::same_grid(grid, field_grid)) {
      throw io::IoError(p.field + ": the field's grid differs from the reference image's (" +
                        p.reference + "); the field must live on the fixed (reference) grid");
    }
  }
  io::Volume moving =
      io::read_volume(p.moving, p.labels ? io::PixelKind::Labels : io::PixelKind::Intensity);
  if (!p.moving_orientation.empty()) moving.geometry = io::with_orientation(moving.geometry, p.moving_orientation);
  const io::Volume warped{io::sample_mapped(moving, grid, affine, u), grid};
  io::write_volume(p.out, warped);
  if (!p.qc.empty()) {
    // A label map is outlined on the reference; an image is shown beside it.
    write_qc_picture(p.qc, {reference.data, warped.data, p.labels ? warped.data : at::Tensor(), u, grid,
                            "autoreg apply: " + file_stem(p.moving) + " onto " + file_stem(p.reference),
                            file_stem(p.moving) + " through " + file_stem(p.field) + " onto " + file_stem(p.reference)});
  }
}

// Points of the fixed image carried into the moving image, written in physical
// coordinates in the format --out names.
void apply_points(const std::string& field, const std::string& in, const std::string& out, const io::PointFileOptions& o) {
  io::check_output(out);
  io::point_format_of(out);  // a name that says a format, before any work
  io::PointSet points = io::read_points(in, o);
  if (is_affine_file(field)) {
    points.points = io::affine_points(points.points, io::read_affine(field));
  } else {
    io::Geometry grid;
    const at::Tensor u = io::read_displacement_field(field, &grid);
    points.points = io::displace_points(points.points, u, grid, in);
  }
  io::write_points(out, points);
}

}  // namespace

int run_apply(int argc, char** argv) {
  TCLAP::CmdLine cmd("Apply a displacement field (physical LPS mm, on the fixed grid, as written "
                     "by autoreg register or ANTs) to an image or a label map.",
                     ' ', "0.1");
  TCLAP::ValueArg<std::string> field("", "field", "displacement field (ITK vector image or .h5 DisplacementFieldTransform), or an affine (.tfm, .txt, .mat)", true, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> moving("", "moving", "image or label map to warp", false, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> reference("", "reference", "fixed image: the output grid", false, "", "FILE", cmd);
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
  TCLAP::ValueArg<std::string> qc("", "qc", "a picture to check the result (PNG): the reference and the warped volume in three orthogonal slices, and the field's log Jacobian", false, "", "FILE.png", cmd);
  cmd.setExceptionHandling(false);
  cmd.parse(argc, argv);
  if (points.isSet()) {
    for (const TCLAP::Arg* a : std::initializer_list<const TCLAP::Arg*>{&moving, &reference, &interpolation, &moving_orientation, &qc}) {
      if (a->isSet()) throw UsageError("--" + a->getName() + " is for images; --points moves points");
    }
    std::string in = points.getValue(), to = out.getValue(), f = field.getValue();
    refuse_overwrite({&to}, {&f, &in});
    apply_points(f, in, to, point_index.options());
    std::printf("wrote %s\n", to.c_str());
    return kOk;
  }
  if (!moving.isSet() || !reference.isSet()) throw UsageError("--moving and --reference are required (or --points)");
  if (point_index.is_set()) throw UsageError("--points-grid and --points-index-base go with --points");

  ApplyParams p{field.getValue(), moving.getValue(), reference.getValue(), out.getValue(),
                checked_orientation("--moving-orientation", moving_orientation.getValue()),
                interpolation.getValue() == "nearest", qc.getValue()};
  if (!p.qc.empty() && !ends_with_png(p.qc)) throw UsageError("--qc writes a PNG picture: give a name ending in .png");
  refuse_overwrite({&p.out, &p.qc}, {&p.field, &p.moving, &p.reference});
  apply(p);
  std::printf("wrote %s\n", p.out.c_str());
  return kOk;
}

}  // namespace autoreg::apps
