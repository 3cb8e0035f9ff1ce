// Marching squares on each slice of a volume, loops assembled into closed contours
// (contours.h).
#include "autoreg/rt/contours.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace autoreg::rt {
namespace {

using Point2 = std::array<double, 2>;

// One slice's values on a grid of corners padded by one ring of "below everything"
// (-inf) corners, so that every loop closes inside the padded grid. Crossing points
// live on the edges between corners; edge id 2·(j·W + i) is the edge from corner (i, j)
// to (i+1, j), id 2·(j·W + i) + 1 the edge from (i, j) to (i, j+1).
class SliceSquares {
 public:
  SliceSquares(int64_t nx, int64_t ny, double level)
      : w_(nx + 2), h_(ny + 2), level_(level), values_(size_t(w_ * h_)), next_(size_t(2 * w_ * h_), -1) {}

  // Loads slice `data` (nx · ny values); false when no voxel is at or above the level.
  bool load(const float* data, int64_t k) {
    constexpr float kBelow = -std::numeric_limits<float>::infinity();
    std::fill(values_.begin(), values_.end(), kBelow);
    bool any = false;
    for (int64_t j = 0; j < h_ - 2; ++j)
      for (int64_t i = 0; i < w_ - 2; ++i) {
        const float v = data[j * (w_ - 2) + i];
        if (!std::isfinite(v))
          throw std::invalid_argument("contours_from_volume: the value at voxel (" + std::to_string(i) + ", " +
                                      std::to_string(j) + ", " + std::to_string(k) + ") is not finite");
        values_[(j + 1) * w_ + i + 1] = v;
        any = any || v >= level_;
      }
    return any;
  }

  // Links every crossing to the next along its loop, inside on the left.
  void link_cells() {
    starts_.clear();
    for (int64_t j = 0; j + 1 < h_; ++j)
      for (int64_t i = 0; i + 1 < w_; ++i) link_cell(i, j);
  }

  // The loops as polygons in the slice's voxel coordinates (unpadded).
  std::vector<std::vector<Point2>> loops() {
    std::vector<std::vector<Point2>> out;
    for (const int64_t start : starts_) {
      if (next_[start] < 0) continue;  // already walked
      std::vector<Point2> loop;
      int64_t id = start;
      do {
        loop.push_back(crossing(id));
        const int64_t following = next_[id];
        next_[id] = -1;
        if (following < 0) throw std::logic_error("contours_from_volume: a marching-squares loop is open");
        id = following;
      } while (id != start);
      out.push_back(std::move(loop));
    }
    return out;
  }

 private:
  bool inside(int64_t i, int64_t j) const { return values_[j * w_ + i] >= level_; }

  void link_cell(int64_t i, int64_t j) {
    // Corners counter-clockwise (c0 = (i, j), c1 = (i+1, j), c2 = (i+1, j+1), c3 = (i, j+1)),
    // edge e runs from corner e to corner e+1.
    const bool in[4] = {inside(i, j), inside(i + 1, j), inside(i + 1, j + 1), inside(i, j + 1)};
    const int count = in[0] + in[1] + in[2] + in[3];
    if (count == 0 || count == 4) return;
    const int64_t edge[4] = {2 * (j * w_ + i), 2 * (j * w_ + i + 1) + 1, 2 * ((j + 1) * w_ + i),
                             2 * (j * w_ + i) + 1};
    const bool saddle = count == 2 && in[0] == in[2];
    // A saddle's centre (the corners' mean) decides whether its two inside corners join.
    const bool joined = saddle && (double(values_[j * w_ + i]) + values_[j * w_ + i + 1] +
                                   values_[(j + 1) * w_ + i + 1] + values_[(j + 1) * w_ + i]) /
                                          4 >= level_;
    for (int e = 0; e < 4; ++e) {
      if (!(in[e] && !in[(e + 1) % 4])) continue;  // leaves the inside at edge e
      // Inside on the left: to the next edge where the inside is entered, going
      // counter-clockwise; for a saddle whose inside corners are apart, the previous one.
      int to = (e + 1) % 4;
      if (saddle && !joined) to = (e + 3) % 4;
      else
        while (!(!in[to] && in[(to + 1) % 4])) to = (to + 1) % 4;
      next_[edge[e]] = edge[to];
      starts_.push_back(edge[e]);
    }
  }

  // The crossing on edge `id`, by linear interpolation (midway next to the padding).
  Point2 crossing(int64_t id) const {
    const int64_t base = id / 2, i = base % w_, j = base / w_;
    const bool horizontal = id % 2 == 0;
    const double a = values_[base], b = values_[horizontal ? base + 1 : base + w_];
    const double t = (std::isinf(a) || std::isinf(b)) ? 0.5 : (level_ - a) / (b - a);
    return horizontal ? Point2{double(i - 1) + t, double(j - 1)} : Point2{double(i - 1), double(j - 1) + t};
  }

  int64_t w_, h_;
  double level_;
  std::vector<float> values_;
  std::vector<int64_t> next_, starts_;
};

double area(const std::vector<Point2>& loop) {
  double twice = 0;
  for (size_t p = 0; p < loop.size(); ++p) {
    const auto& a = loop[p];
    const auto& b = loop[(p + 1) % loop.size()];
    twice += a[0] * b[1] - a[1] * b[0];
  }
  return twice / 2;
}

// Whether b lies on the straight line from a on to c (same direction, no turn).
bool straight(const Point2& a, const Point2& b, const Point2& c) {
  const double ux = b[0] - a[0], uy = b[1] - a[1], vx = c[0] - b[0], vy = c[1] - b[1];
  const double cross = ux * vy - uy * vx, dot = ux * vx + uy * vy;
  return dot > 0 && std::fabs(cross) <= 1e-9 * std::sqrt((ux * ux + uy * uy) * (vx * vx + vy * vy));
}

std::vector<Point2> without_straight_points(const std::vector<Point2>& loop) {
  std::vector<Point2> out;
  for (const auto& p : loop) {
    if (!out.empty() && out.back() == p) continue;  // a crossing on a corner whose value is the level
    while (out.size() >= 2 && straight(out[out.size() - 2], out.back(), p)) out.pop_back();
    out.push_back(p);
  }
  // Around the join of the last point and the first.
  if (out.size() >= 2 && out.back() == out.front()) out.pop_back();
  while (out.size() >= 3 && straight(out[out.size() - 2], out.back(), out.front())) out.pop_back();
  while (out.size() >= 3 && straight(out.back(), out.front(), out[1])) out.erase(out.begin());
  return out;
}

}  // namespace

std::vector<Contour> contours_from_volume(const float* values, const DicomSeries& series, double level) {
  const Grid& grid = series.grid;
  if (values == nullptr) throw std::invalid_argument("contours_from_volume: no values");
  if (!std::isfinite(level)) throw std::invalid_argument("contours_from_volume: the level is not finite");
  if (int64_t(series.slices.size()) != grid.size[2])
    throw std::invalid_argument("contours_from_volume: the series has " + std::to_string(series.slices.size()) +
                                " slices for a grid of " + std::to_string(grid.size[2]));
  const int64_t nx = grid.size[0], ny = grid.size[1];
  SliceSquares squares(nx, ny, level);
  std::vector<Contour> out;
  for (int64_t k = 0; k < grid.size[2]; ++k) {
    if (!squares.load(values + k * nx * ny, k)) continue;
    squares.link_cells();
    for (const auto& raw : squares.loops()) {
      const auto loop = without_straight_points(raw);
      if (loop.size() < 3 || std::fabs(area(loop)) < 0.25) continue;  // degenerate
      Contour contour;
      contour.referenced_sop_instance_uid = series.slices[size_t(k)].sop_instance_uid;
      for (const auto& p : loop) contour.points.push_back(index_to_physical(grid, {p[0], p[1], double(k)}));
      out.push_back(std::move(contour));
    }
  }
  return out;
}

int64_t voxels_on_border(const float* values, const Grid& grid, double level) {
  const int64_t nx = grid.size[0], ny = grid.size[1], nz = grid.size[2];
  int64_t count = 0;
  for (int64_t k = 0; k < nz; ++k)
    for (int64_t j = 0; j < ny; ++j) {
      const float* row = values + (k * ny + j) * nx;
      if (k == 0 || k == nz - 1 || j == 0 || j == ny - 1) {
        for (int64_t i = 0; i < nx; ++i) count += row[i] >= level;
      } else {
        count += row[0] >= level;
        if (nx > 1) count += row[nx - 1] >= level;
      }
    }
  return count;
}

}  // namespace autoreg::rt
