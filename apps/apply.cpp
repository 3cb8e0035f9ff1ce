// autoreg apply --field D --moving X --reference R --out Y [--interpolation linear|nearest]
//               [--qc qc.png]
//
// Applies a displacement field written by `autoreg register` (or by ANTs: the same
// convention), or an affine ITK transform file, to another image or label map on any
// grid: each reference voxel x takes the moving volume's value at x + d(x) (or A·x), in
// one interpolation.
#include <tclap/CmdLine.h>

#include <ATen/ATen.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "autoreg/io/field.h"
#include "autoreg/io/grid.h"
#include "autoreg/io/mapped.h"
#include "autoreg/io/volume.h"
#include "autoreg/io/transform.h"
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

}  // namespace

int run_apply(int argc, char** argv) {
  TCLAP::CmdLine cmd("Apply a displacement field (physical LPS mm, on the fixed grid, as written "
                     "by autoreg register or ANTs) to an image or a label map.",
                     ' ', "0.1");
  TCLAP::ValueArg<std::string> field("", "field", "displacement field (ITK vector image or .h5 DisplacementFieldTransform), or an affine (.tfm, .txt, .mat)", true, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> moving("", "moving", "image or label map to warp", true, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> reference("", "reference", "fixed image: the output grid", true, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> out("", "out", "warped output", true, "", "FILE", cmd);
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
