#include "autoreg/pair/frame.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <optional>

#include "autoreg/io/field.h"
#include "autoreg/io/grid.h"
#include "autoreg/io/mapped.h"
#include "autoreg/io/transform.h"
#include "autoreg/registration/field_box.h"

namespace autoreg::pipeline {

io::Geometry model_frame(const io::Volume& fixed, const registration::ModelInfo& info) {
  const registration::Box box = registration::foreground_box(fixed.data, fixed.data, 0);
  const io::Geometry& g = fixed.geometry;
  io::Geometry frame;
  for (int a = 0; a < 3; ++a) {
    frame.size[a] = info.grid[2 - a];  // tensor dimension 2 - a is axis a
    frame.spacing[a] = info.spacing[2 - a];
  }
  frame.direction = info.orientation.empty() ? g.direction : io::with_orientation(g, info.orientation).direction;
  // The foreground box's centre, physical, and the frame's centre on it.
  std::array<double, 3> centre = g.origin;
  for (int a = 0; a < 3; ++a) {
    const double index = 0.5 * double(box[2 - a][0] + box[2 - a][1] - 1);
    for (int r = 0; r < 3; ++r) centre[r] += g.direction[3 * r + a] * g.spacing[a] * index;
  }
  for (int r = 0; r < 3; ++r) {
    frame.origin[r] = centre[r];
    for (int a = 0; a < 3; ++a) {
      frame.origin[r] -= frame.direction[3 * r + a] * frame.spacing[a] * 0.5 * double(frame.size[a] - 1);
    }
  }
  return frame;
}

at::Tensor on_frame(const io::Volume& volume, const at::Tensor& affine, const io::Geometry& frame) {
  return io::sample_mapped(volume, frame, affine, at::Tensor());
}

namespace {

// A displacement on the frame (1×3×…, frame voxels) as one on the fixed grid.
at::Tensor frame_field_on_fixed_grid(const at::Tensor& u, const io::Geometry& frame, const io::Geometry& fixed_grid) {
  // The vectors in the fixed grid's voxels while still on the (small) frame: the map
  // from frame voxels to fixed voxels is linear and constant, so it commutes with the
  // trilinear resampling below, which then writes the result directly.
  io::Geometry fixed_axes = fixed_grid;
  fixed_axes.size = frame.size;
  const at::Tensor in_fixed_voxels =
      io::physical_to_voxel(io::voxel_to_physical(u.cpu().to(at::kDouble), frame), fixed_axes).to(at::kFloat).contiguous();
  // The three channels at once; separably where the frame's axes are the fixed grid's
  // (models that keep their orientation, on inputs that are not oblique).
  const io::Volume field{in_fixed_voxels, frame};
  // Outside the frame the field continues with its values at the frame's faces: set to
  // 0 there, it jumped at the faces, and the jump folded (0.005-0.03 % of the voxels of
  // OASIS-TRT training pairs, on two planes 160 mm apart: the 80 voxels of 2 mm).
  const std::optional<at::Tensor> fast = io::sample_on_parallel_grid(field, fixed_grid, io::Outside::Border);
  return fast ? *fast : io::sample_mapped(field, fixed_grid, at::Tensor(), at::Tensor(), io::Outside::Border);
}

}  // namespace

at::Tensor predict_on_fixed_grid(registration::Model& model, const at::Tensor& moving_on_frame,
                                 const at::Tensor& fixed_on_frame, const io::Geometry& frame,
                                 const io::Geometry& fixed_grid, at::Tensor* inverse) {
  c10::AutoGradMode no_grad(false);
  model.network->eval();
  if (!inverse) {
    return frame_field_on_fixed_grid(model.network->forward(moving_on_frame, fixed_on_frame), frame, fixed_grid);
  }
  const auto both = model.network->forward_with_inverse(moving_on_frame, fixed_on_frame);
  *inverse = frame_field_on_fixed_grid(both[1], frame, fixed_grid);
  return frame_field_on_fixed_grid(both[0], frame, fixed_grid);
}

}  // namespace autoreg::pipeline

