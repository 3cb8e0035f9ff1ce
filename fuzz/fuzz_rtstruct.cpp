// DICOM RT Structure Sets through rt::read_structure_set (DCMTK's parsing and the checks
// rt/ adds after it), each ROI then filled by rt::rasterise on two small grids: one that
// covers the contours' points (32 × 32 columns and rows, up to 8 slices on the contours'
// planes: the fill itself) and a fixed one (the grid of make_seeds.cpp's synthetic
// series: contours beyond its rows, columns and slices, clipped or skipped). The same
// file, alone in its folder, is also read as a series by rt::read_series (the headers of
// an image slice); when both readers accept it, rt::check_references compares them.
// DicomError is the readers' documented answer to bad input; rasterise may also throw
// std::invalid_argument (a grid whose axes are singular).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <optional>
#include <stdexcept>
#include <vector>

#include "autoreg/rt/grid.h"
#include "autoreg/rt/rasterise.h"
#include "autoreg/rt/series.h"
#include "autoreg/rt/structure_set.h"
#include "fuzz_input.h"

namespace {

using namespace autoreg;

// The synthetic series of make_seeds.cpp: 32 columns × 32 rows × 8 slices, 1.5 mm
// between columns, 1.25 mm between rows, 3 mm between slices, axial.
rt::Grid seed_grid() {
  rt::Grid g;
  g.size = {32, 32, 8};
  g.spacing = {1.5, 1.25, 3};
  g.origin = {-30.5, 12.25, -100};
  return g;
}

// A spacing that maps `span` onto `steps` voxels; 1 where that is not a positive finite
// number (one point, or a span too wide for a double).
double spacing_for(double span, double steps) {
  const double s = span / steps;
  return std::isfinite(s) && s > 0 ? s : 1.0;
}

// An axial grid of 32 × 32 × (up to) 8 voxels over the contours' points: columns and
// rows from the smallest to the largest x and y, slices on the contours' planes (the
// first points' z), as far apart as the two nearest planes.
std::optional<rt::Grid> covering_grid(const rt::StructureSet& set) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  double lo[2] = {inf, inf}, hi[2] = {-inf, -inf};
  std::vector<double> planes;
  for (const rt::Roi& roi : set.rois)
    for (const rt::Contour& c : roi.contours) {
      if (c.points.empty()) continue;
      planes.push_back(c.points.front()[2]);
      for (const auto& p : c.points)
        for (int a = 0; a < 2; ++a) lo[a] = std::min(lo[a], p[a]), hi[a] = std::max(hi[a], p[a]);
    }
  if (planes.empty()) return std::nullopt;
  std::sort(planes.begin(), planes.end());
  double gap = inf;
  for (size_t i = 1; i < planes.size(); ++i)
    if (planes[i] > planes[i - 1]) gap = std::min(gap, planes[i] - planes[i - 1]);
  rt::Grid g;
  g.spacing = {spacing_for(hi[0] - lo[0], 31), spacing_for(hi[1] - lo[1], 31), spacing_for(gap, 1)};
  const double slices = std::floor((planes.back() - planes.front()) / g.spacing[2]) + 1;
  g.size = {32, 32, int64_t(std::isfinite(slices) ? std::clamp(slices, 1.0, 8.0) : 8.0)};
  g.origin = {lo[0], lo[1], planes.front()};
  return g;
}

void fill(const rt::StructureSet& set, const rt::Grid& grid, const std::string& path) {
  for (const rt::Roi& roi : set.rois) {
    fuzz::expect_clean<rt::DicomError>([&] {
      try {
        rt::rasterise(roi, grid, path);
      } catch (const std::invalid_argument&) {
      }
    });
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The file is alone in its folder (this process's own): read_series reads that folder.
  const std::string path = fuzz::as_file(data, size, ".dcm");
  std::optional<rt::StructureSet> set;
  fuzz::expect_clean<rt::DicomError>([&] { set = rt::read_structure_set(path); });
  if (set) {
    if (const auto grid = covering_grid(*set)) fill(*set, *grid, path);
    fill(*set, seed_grid(), path);
  }
  std::optional<rt::DicomSeries> series;
  const std::string folder = std::filesystem::path(path).parent_path().string();
  fuzz::expect_clean<rt::DicomError>([&] { series = rt::read_series(folder); });
  if (set && series) {
    fuzz::expect_clean<rt::DicomError>([&] { rt::check_references(*set, *series, path, folder); });
  }
  return 0;
}
