// What the point readers and writers share (io/points.h): names, the RAS/LPS flip,
// indices and points of a grid. Detail of autoreg_io.
#pragma once

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

#include "autoreg/io/points.h"

namespace autoreg::io::point_detail {

using Point = std::array<double, 3>;

inline bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

inline std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// RAS ↔ LPS (its own inverse).
inline Point ras_lps(const Point& p) { return {-p[0], -p[1], p[2]}; }

inline Point index_to_point(const Point& index, const Geometry& g) {
  Point p;
  for (int r = 0; r < 3; ++r) {
    p[r] = g.origin[r];
    for (int c = 0; c < 3; ++c) p[r] += g.direction[r * 3 + c] * g.spacing[c] * index[c];
  }
  return p;
}

inline Point point_to_index(const Point& p, const Geometry& g) {
  // direction is orthonormal: its inverse is its transpose.
  Point index;
  for (int c = 0; c < 3; ++c) {
    double s = 0;
    for (int r = 0; r < 3; ++r) s += g.direction[r * 3 + c] * (p[r] - g.origin[r]);
    index[c] = s / g.spacing[c];
  }
  return index;
}

inline const Geometry& grid_for(const PointFileOptions& o, const std::string& path, const std::string& why) {
  if (!o.grid) throw IoError(path + ": " + why + " are voxel indices; give the image whose grid they index");
  return *o.grid;
}

}  // namespace autoreg::io::point_detail
