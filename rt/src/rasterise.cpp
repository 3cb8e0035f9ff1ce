// Closed planar contours filled by scan lines (rasterise.h).
#include "autoreg/rt/rasterise.h"

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <map>
#include <optional>
#include <stdexcept>

#include "autoreg/rt/errors.h"

namespace autoreg::rt {
namespace {

// A contour in the grid's continuous voxel coordinates (x = i, y = j), on slice k.
struct Polygon {
  std::vector<std::array<double, 2>> points;
};

// A plane's index for messages (a contour may lie 1e300 slices away: no integer cast).
std::string plane_name(double k) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f", k);
  return text;
}

// ceil(v) within [lo, hi], clamped before the cast (coordinates may be far beyond the grid).
int64_t ceil_within(double v, int64_t lo, int64_t hi) {
  if (std::isnan(v)) return lo;  // inf − inf of points near the largest doubles
  return int64_t(std::clamp(std::ceil(v), double(lo), double(hi)));
}

// The contour mapped to voxel coordinates; its slice k, or nothing when that plane is
// beyond the grid. Throws when a point is off the contour's plane.
std::optional<int64_t> to_slice(const Contour& contour, const Roi& roi, int index, const Grid& grid,
                                const std::string& file, Polygon& polygon) {
  constexpr double kPlaneTolerance = 0.1;  // of the slice spacing
  polygon.points.clear();
  double k0 = 0;
  for (size_t p = 0; p < contour.points.size(); ++p) {
    const auto v = physical_to_index(grid, contour.points[p]);
    if (p == 0) {
      k0 = std::round(v[2]);
      // On a plane beyond the grid: skipped, unchecked (off every plane: refused below).
      if ((k0 < 0 || k0 >= double(grid.size[2])) && std::fabs(v[2] - k0) <= kPlaneTolerance) return std::nullopt;
    }
    const double off = std::fabs(v[2] - k0);
    if (off > kPlaneTolerance) {
      const char* prefix = file.empty() ? "" : ": ";
      throw DicomError(file + prefix + "ROI '" + roi.name + "' (number " + std::to_string(roi.number) + "), contour " +
                       std::to_string(index + 1) + ": point " + std::to_string(p + 1) + " is " +
                       std::to_string(off * grid.spacing[2]) + " mm off the slice plane k = " +
                       plane_name(k0) + " (more than a tenth of the slice spacing, " +
                       std::to_string(grid.spacing[2]) + " mm): contours must lie on the series' slices");
    }
    polygon.points.push_back({v[0], v[1]});
  }
  if (k0 < 0 || k0 >= double(grid.size[2])) return std::nullopt;
  return int64_t(k0);
}

// Even-odd fill of one slice's polygons: for each row of voxel centres y = j, the
// crossings of every polygon edge (half-open in y, so a vertex on the row counts once),
// sorted; voxel centres between the 1st and 2nd, 3rd and 4th, ... crossings are inside.
void fill_slice(const std::vector<Polygon>& polygons, const Grid& grid, uint8_t* slice,
                std::vector<std::vector<double>>& rows) {
  const int64_t nx = grid.size[0], ny = grid.size[1];
  for (auto& r : rows) r.clear();
  for (const Polygon& polygon : polygons) {
    const auto& pts = polygon.points;
    for (size_t e = 0; e < pts.size(); ++e) {
      const auto& a = pts[e];
      const auto& b = pts[(e + 1) % pts.size()];
      if (a[1] == b[1]) continue;  // horizontal: crosses no row by the half-open rule
      const double y_low = std::min(a[1], b[1]), y_high = std::max(a[1], b[1]);
      // Rows j with y_low <= j < y_high.
      const int64_t j_first = ceil_within(y_low, 0, ny), j_end = ceil_within(y_high, 0, ny);
      const double slope = (b[0] - a[0]) / (b[1] - a[1]);
      for (int64_t j = j_first; j < j_end; ++j) rows[j].push_back(a[0] + (double(j) - a[1]) * slope);
    }
  }
  for (int64_t j = 0; j < ny; ++j) {
    auto& xs = rows[j];
    std::sort(xs.begin(), xs.end());
    for (size_t c = 0; c + 1 < xs.size(); c += 2) {
      // Centres x = i with xs[c] <= i < xs[c + 1].
      const int64_t i_first = ceil_within(xs[c], 0, nx), i_end = ceil_within(xs[c + 1], 0, nx);
      for (int64_t i = i_first; i < i_end; ++i) slice[j * nx + i] = 1;
    }
  }
}

}  // namespace

Rasterised rasterise(const Roi& roi, const Grid& grid, const std::string& file) {
  for (int a = 0; a < 3; ++a)
    if (grid.size[a] <= 0 || !(grid.spacing[a] > 0)) throw std::invalid_argument("rasterise: the grid is empty");
  Rasterised out;
  out.mask.assign(size_t(voxel_count(grid)), 0);
  std::map<int64_t, std::vector<Polygon>> by_slice;
  for (size_t c = 0; c < roi.contours.size(); ++c) {
    Polygon polygon;
    const auto k = to_slice(roi.contours[c], roi, int(c), grid, file, polygon);
    if (!k) {
      ++out.contours_outside;
      continue;
    }
    ++out.contours_filled;
    by_slice[*k].push_back(std::move(polygon));
  }
  std::vector<std::vector<double>> rows(size_t(grid.size[1]));
  const int64_t slice_voxels = grid.size[0] * grid.size[1];
  for (const auto& [k, polygons] : by_slice) fill_slice(polygons, grid, out.mask.data() + k * slice_voxels, rows);
  return out;
}

}  // namespace autoreg::rt
