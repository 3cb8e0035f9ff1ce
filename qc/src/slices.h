// Internal to qc/: which planes the picture shows and how their pixels are sampled from
// the volumes (orientation from the axis letters, physical aspect from the spacing).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "autoreg/qc/picture.h"

namespace autoreg::qc::detail {

// One row's plane: pixel columns run along tensor axis `across`, pixel rows along `down`,
// each flipped where its index grows against the display direction.
struct Plane {
  int normal = 0, across = 2, down = 1;
  bool flip_across = false, flip_down = false;
  std::string name;                // "axial", "coronal", "sagittal"; "plane D" ... without letters
  std::array<char, 4> edges{};     // the letters at the top, bottom, left, right; 0 without letters
};

// Axial, coronal, sagittal in the radiological convention when the letters name the
// three anatomical axes (either case); else the planes perpendicular to D, H, W.
std::array<Plane, 3> display_planes(const std::array<char, 3>& letters);

// The centroid (rounded) of the voxels above 10% of the volume's 99.5th percentile
// (inside `inside`, where given).
std::array<int64_t, 3> foreground_centre(const VolumeView& v, const MaskView& inside = {});
// The centroid (rounded) of the non-zero labels; {-1, -1, -1} when there are none.
std::array<int64_t, 3> label_centre(const LabelView& labels);

// The q-quantile (q in [0, 1]) of the values (reordered); NaN when empty.
float quantile(std::vector<float>& values, double q);

// Grey levels of a volume: [lo, hi] maps to [0, 1].
struct Window {
  float lo = 0, hi = 1;
  float operator()(float v) const { return (v - lo) / (hi - lo); }
};
// The window `given` names, or (NaN) the 1st-99th percentile of the finite voxels inside
// `inside` (where given; else the non-zero ones) of a sample of at most ~1M.
Window grey_window(const VolumeView& v, const GreyWindow& given = {}, const MaskView& inside = {});

// A panel of width × height pixels showing `plane` through `centre`.
struct PanelGrid {
  Plane plane;
  std::array<int64_t, 3> size{}, centre{};
  int width = 0, height = 0;
};
// The panel's pixels, row-major: bilinear within the plane for intensities, nearest for
// labels and log-Jacobians (a folded voxel's NaN must not leak into its neighbours).
std::vector<float> sample_linear(const float* data, const PanelGrid& g);
std::vector<float> sample_nearest(const float* data, const PanelGrid& g);
std::vector<int32_t> sample_nearest(const int32_t* data, const PanelGrid& g);
std::vector<uint8_t> sample_nearest(const uint8_t* data, const PanelGrid& g);

}  // namespace autoreg::qc::detail
