#include "autoreg/pipeline/frame.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <optional>
#include <vector>

#include "autoreg/io/field.h"
#include "autoreg/io/grid.h"
#include "autoreg/io/mapped.h"
#include "autoreg/io/transform.h"

namespace autoreg::pipeline {

Box foreground_box(const at::Tensor& a, const at::Tensor& b, int64_t margin) {
  const at::Tensor mask = ((a > 0.02) | (b > 0.02)).squeeze(0).squeeze(0).cpu();
  Box box{};
  for (int64_t d = 0; d < 3; ++d) {
    const int64_t n = mask.size(d);
    std::vector<int64_t> others;
    for (int64_t e = 0; e < 3; ++e) {
      if (e != d) others.push_back(e);
    }
    const at::Tensor where = mask.any(others[1]).any(others[0]).nonzero();
    if (where.numel() == 0) return {{{0, mask.size(0)}, {0, mask.size(1)}, {0, mask.size(2)}}};
    box[d] = {std::max<int64_t>(0, where.min().item<int64_t>() - margin),
              std::min<int64_t>(n, where.max().item<int64_t>() + 1 + margin)};
  }
  return box;
}

at::Tensor crop(const at::Tensor& t, const Box& box) {
  at::Tensor c = t;
  for (int d = 0; d < 3; ++d) c = c.slice(2 + d, box[d][0], box[d][1]);
  return c.contiguous();
}

at::Tensor uncrop_replicate(const at::Tensor& inside, const Box& box, at::IntArrayRef full) {
  return at::replication_pad3d(inside, {box[2][0], full[2] - box[2][1], box[1][0], full[1] - box[1][1],
                                        box[0][0], full[0] - box[0][1]});
}

io::Geometry model_frame(const io::Volume& fixed, const registration::ModelInfo& info) {
  const Box box = foreground_box(fixed.data, fixed.data, 0);
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

at::Tensor predict_on_fixed_grid(registration::Model& model, const at::Tensor& moving_on_frame,
                                 const at::Tensor& fixed_on_frame, const io::Geometry& frame,
                                 const io::Geometry& fixed_grid) {
  c10::AutoGradMode no_grad(false);
  model.network->eval();
  const at::Tensor u = model.network->forward(moving_on_frame, fixed_on_frame).cpu();
  // The vectors in the fixed grid's voxels while still on the (small) frame: the map
  // from frame voxels to fixed voxels is linear and constant, so it commutes with the
  // trilinear resampling below, which then writes the result directly.
  io::Geometry fixed_axes = fixed_grid;
  fixed_axes.size = frame.size;
  const at::Tensor in_fixed_voxels =
      io::physical_to_voxel(io::voxel_to_physical(u.to(at::kDouble), frame), fixed_axes).to(at::kFloat).contiguous();
  // The three channels at once; separably where the frame's axes are the fixed grid's
  // (models that keep their orientation, on inputs that are not oblique).
  const io::Volume field{in_fixed_voxels, frame};
  const std::optional<at::Tensor> fast = io::sample_on_parallel_grid(field, fixed_grid);
  return fast ? *fast : io::sample_mapped(field, fixed_grid, at::Tensor(), at::Tensor());
}

}  // namespace autoreg::pipeline
