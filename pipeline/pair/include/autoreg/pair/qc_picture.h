// The QC picture (autoreg/qc/picture.h) of volumes on a fixed grid, from tensors: what
// `register --qc`, `apply --qc`, `segment --qc` and the batch's pictures share.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

#include "autoreg/io/volume.h"
#include "autoreg/qc/picture.h"

namespace autoreg::pipeline {

struct QcVolumes {
  at::Tensor fixed;         // 1×1×D×H×W float32 on `grid`
  at::Tensor warped;        // the same: the moving image (or images) carried onto the grid
  at::Tensor labels;        // optional int32: label outlines drawn on the fixed image
  at::Tensor displacement;  // optional 1×3×D×H×W voxels: its log Jacobian determinant
  io::Geometry grid;
  std::string title, caption;
  std::string warning;  // a failed check (pair_checks.h), in red below the caption
  // Optional (1×1×D×H×W, non-zero inside): where the fixed image has data (its field of
  // view) and where the warped moving one does; their edges are drawn, the grey windows'
  // percentiles taken inside them and the log Jacobian shown only where both have data.
  at::Tensor fixed_inside, warped_inside;
  qc::GreyWindow fixed_window, warped_window;  // default: percentiles
};

struct PairResult;
// For a registered pair's picture (v.warped and v.grid set): each scan's display window
// by its kind (a CT in the soft-tissue window W400 L40 HU; a cone-beam CT, whose numbers
// are not HU, by the percentiles of its body inside its field of view; anything else by
// its percentiles, inside its field of view where it has one) and, when either scan has
// a field of view, where each has data (`fixed_voxels`: the raw fixed intensities;
// `moving`: the raw moving volume).
void set_scan_views(QcVolumes& v, const PairResult& r, const at::Tensor& fixed_voxels, const io::Volume& moving);

// Writes the picture (atomically). Throws std::runtime_error naming `path`.
void write_qc_picture(const std::string& path, const QcVolumes& v);

}  // namespace autoreg::pipeline
