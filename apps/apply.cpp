// autoreg apply --field D --moving X --reference R --out Y [--interpolation linear|nearest]
//
// Applies a displacement field written by `autoreg register` (or by ANTs: the same
// convention) to another image or label map: the moving image is brought onto the
// field's grid (the reference's) and pulled back through the field.
#include <tclap/CmdLine.h>

#include <ATen/ATen.h>

#include <cstdio>
#include <string>

#include "autoreg/io/field.h"
#include "autoreg/io/grid.h"
#include "autoreg/io/volume.h"
#include "autoreg/ops.h"
#include "exit_codes.h"
#include "options.h"
#include "warp_volume.h"

namespace autoreg::apps {
namespace {

struct ApplyParams {
  std::string field, moving, reference, out;
  bool labels = false;  // nearest-neighbour, integer output (for label maps)
};

void apply(const ApplyParams& p) {
  io::Geometry field_grid;
  const at::Tensor u = io::read_displacement_field(p.field, &field_grid);
  if (!io::same_grid(io::read_geometry(p.reference), field_grid)) {
    throw io::IoError(p.field + ": the field's grid differs from the reference image's (" +
                      p.reference + "); the field must live on the fixed (reference) grid");
  }
  const io::Volume moving =
      io::read_volume(p.moving, p.labels ? io::PixelKind::Labels : io::PixelKind::Intensity);
  const auto how = p.labels ? io::Resampling::Nearest : io::Resampling::Linear;
  io::write_volume(p.out, {warp_volume(io::resample(moving, field_grid, how), u), field_grid});
}

}  // namespace

int run_apply(int argc, char** argv) {
  TCLAP::CmdLine cmd("Apply a displacement field (physical LPS mm, on the fixed grid, as written "
                     "by autoreg register or ANTs) to an image or a label map.",
                     ' ', "0.1");
  TCLAP::ValueArg<std::string> field("", "field", "displacement field (ITK vector image)", true, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> moving("", "moving", "image or label map to warp", true, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> reference("", "reference", "fixed image: the output grid", true, "", "FILE", cmd);
  TCLAP::ValueArg<std::string> out("", "out", "warped output", true, "", "FILE", cmd);
  std::vector<std::string> modes = {"linear", "nearest"};
  TCLAP::ValuesConstraint<std::string> allowed(modes);
  TCLAP::ValueArg<std::string> interpolation(
      "", "interpolation", "linear (images, default) or nearest (label maps)", false, "linear",
      &allowed, cmd);
  cmd.setExceptionHandling(false);
  cmd.parse(argc, argv);

  ApplyParams p{field.getValue(), moving.getValue(), reference.getValue(), out.getValue(),
                interpolation.getValue() == "nearest"};
  refuse_overwrite({&p.out}, {&p.field, &p.moving, &p.reference});
  apply(p);
  std::printf("wrote %s\n", p.out.c_str());
  return kOk;
}

}  // namespace autoreg::apps
