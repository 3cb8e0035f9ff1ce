#include "autoreg/pipeline/register_pair.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <c10/core/GradMode.h>

#include <array>
#include <vector>
#include <stdexcept>

#include "autoreg/io/field.h"
#include "autoreg/io/grid.h"
#include "autoreg/io/transform.h"

namespace autoreg::pipeline {
namespace {

// Per tensor dimension (D, H, W): the [begin, end) of the box holding every voxel where
// either image has intensity, with `margin` voxels to spare. Empty images: everything.
std::array<std::array<int64_t, 2>, 3> foreground_box(const at::Tensor& a, const at::Tensor& b,
                                                     int64_t margin) {
  const at::Tensor mask = ((a > 0.02) | (b > 0.02)).squeeze(0).squeeze(0).cpu();
  std::array<std::array<int64_t, 2>, 3> box{};
  for (int64_t d = 0; d < 3; ++d) {
    const int64_t n = mask.size(d);
    std::vector<int64_t> others;
    for (int64_t e = 0; e < 3; ++e) {
      if (e != d) others.push_back(e);
    }
    const at::Tensor any = mask.any(others[1]).any(others[0]);  // n
    const at::Tensor where = any.nonzero();
    if (where.numel() == 0) return {{{0, mask.size(0)}, {0, mask.size(1)}, {0, mask.size(2)}}};
    box[d] = {std::max<int64_t>(0, where.min().item<int64_t>() - margin),
              std::min<int64_t>(n, where.max().item<int64_t>() + 1 + margin)};
  }
  return box;
}

at::Tensor crop(const at::Tensor& t, const std::array<std::array<int64_t, 2>, 3>& box) {
  at::Tensor c = t;
  for (int d = 0; d < 3; ++d) c = c.slice(2 + d, box[d][0], box[d][1]);
  return c.contiguous();
}

}  // namespace

PairResult register_pair(const io::Volume& fixed, const io::Volume& moving, const PairOptions& o,
                         StageTimes* times) {
  if (o.device != "cpu" && o.device != "cuda") {
    throw std::invalid_argument("device must be cpu or cuda, got '" + o.device + "'");
  }
  if (o.device == "cuda" && !at::hasCUDA()) {
    throw std::runtime_error("--device cuda: no CUDA device is available here");
  }
  const at::Device device(o.device == "cuda" ? at::kCUDA : at::kCPU);
  PairResult r;
  const auto lap = [times](const char* stage) {
    if (times) times->lap(stage);
  };
  const at::Tensor f = io::normalize_intensity(fixed.data).to(device);
  const io::Volume m{io::normalize_intensity(moving.data), moving.geometry};
  lap("normalise");
  r.affine = at::eye(4, at::kDouble);
  if (o.stages != Stages::DeformableOnly) {
    r.affine = registration::fit_affine(f, io::index_to_world(fixed.geometry), m.data.to(device),
                                        io::index_to_world(moving.geometry), o.affine)
                   .cpu();
    lap("affine");
  }
  c10::AutoGradMode no_grad(false);
  const at::Tensor grid_points = io::physical_points(fixed.geometry);
  if (o.stages == Stages::AffineOnly) {
    r.deformation = at::zeros_like(grid_points);
  } else {
    // The moving image after the affine, on the fixed grid, is what the field is fitted to.
    const at::Tensor moved = io::sample_at(m, io::transform_points(r.affine, grid_points));
    lap("resample");
    // Fitted only in the box around the two foregrounds (a 256³ head scan is mostly
    // air), and extended outside it by its border values: continuous, so no folding at
    // the box's faces.
    const auto box = o.crop ? foreground_box(f, moved, 8)
                            : std::array<std::array<int64_t, 2>, 3>{
                                  {{0, f.size(2)}, {0, f.size(3)}, {0, f.size(4)}}};
    at::Tensor inside;
    {
      c10::AutoGradMode grad(true);
      inside = registration::fit_displacement(crop(f, box), crop(moved, box).to(device), o.deformable).cpu();
    }
    r.deformation = at::replication_pad3d(
        inside, {box[2][0], f.size(4) - box[2][1], box[1][0], f.size(3) - box[1][1], box[0][0],
                 f.size(2) - box[0][1]});
    lap("deformable");
  }
  r.points = io::transform_points(
      r.affine, grid_points + io::voxel_to_physical(r.deformation, fixed.geometry));
  r.displacement = io::physical_to_voxel(r.points - grid_points, fixed.geometry).to(at::kFloat);
  lap("compose");
  return r;
}

}  // namespace autoreg::pipeline
