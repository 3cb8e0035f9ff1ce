// Multi-atlas segmentation: every atlas (an image with its label map) registered onto the
// target as `autoreg register` does (affine and deformable, the model loaded once), its
// image and labels carried onto the target's grid through the one composed map, then
// the labels fused (autoreg/segmentation/fusion.h). What `autoreg segment` runs.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <string>
#include <vector>

#include "autoreg/io/volume.h"
#include "autoreg/pair/register_pair.h"
#include "autoreg/segmentation/fusion.h"

namespace autoreg::pipeline {

struct AtlasFiles {
  std::string image, labels;
  std::string origin;  // where it was listed ("atlases.csv:3"), for messages
};

struct SegmentOptions {
  PairOptions pair;                  // each atlas's registration onto the target
  segmentation::Options fusion;
  bool registered = false;           // the atlases are on the target's grid already: no registration
  // Called once per atlas after it is on the target's grid: index, its image and labels
  // there (1×1×D×H×W), its registration (null when `registered`; with pair.inverse it
  // holds the inverse map too) and the atlas's own grid.
  std::function<void(size_t, const io::Volume&, const io::Volume&, const PairResult*, const io::Geometry&)> on_atlas;
  std::function<void(const std::string&)> log;  // progress lines
};

struct AtlasReport {
  double seconds = 0;        // reading, registering and warping it
  double folding_percent = 0;  // voxels of its field with a Jacobian determinant ≤ 0
};

struct Segmentation {
  io::Volume labels;               // int32, on the target's grid
  segmentation::Atlases atlases;   // the atlases on the target's grid (D×H×W each)
  segmentation::Fused fused;
  std::vector<AtlasReport> reports;
  double fusion_seconds = 0;
};

// Throws io::IoError naming the file for an unreadable atlas, a label map not on its
// image's grid, or (registered) an atlas not on the target's grid; std::invalid_argument
// for no atlases.
Segmentation segment(const io::Volume& target, const std::vector<AtlasFiles>& atlases, const SegmentOptions& options);

}  // namespace autoreg::pipeline
