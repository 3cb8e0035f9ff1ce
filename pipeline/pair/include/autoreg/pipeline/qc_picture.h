// The QC picture (autoreg/qc/picture.h) of volumes on a fixed grid, from tensors: what
// `register --qc`, `apply --qc`, `segment --qc` and the batch's pictures share.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

#include "autoreg/io/volume.h"

namespace autoreg::pipeline {

struct QcVolumes {
  at::Tensor fixed;         // 1×1×D×H×W float32 on `grid`
  at::Tensor warped;        // the same: the moving image (or images) carried onto the grid
  at::Tensor labels;        // optional int32: label outlines drawn on the fixed image
  at::Tensor displacement;  // optional 1×3×D×H×W voxels: its log Jacobian determinant
  io::Geometry grid;
  std::string title, caption;
  std::string warning;  // a failed check (pair_checks.h), in red below the caption
};

// Writes the picture (atomically). Throws std::runtime_error naming `path`.
void write_qc_picture(const std::string& path, const QcVolumes& v);

}  // namespace autoreg::pipeline
