// Point files written (io/points.h), and the target registration error. No LibTorch here.
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <sstream>

#include "autoreg/base/atomic_file.h"
#include "point_detail.h"

namespace autoreg::io {
namespace {

using namespace point_detail;

std::string text(double v) {
  char b[40];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

// The extra cell `name` of point i, or "".
std::string cell(const PointSet& s, size_t i, const std::string& name) {
  for (size_t c = 0; c < s.columns.size(); ++c) {
    if (lower(s.columns[c]) == name && i < s.extra.size() && c < s.extra[i].size()) return s.extra[i][c];
  }
  return "";
}

std::string csv_text(const PointSet& s) {
  std::ostringstream out;
  out << "x,y,z";
  for (const auto& c : s.columns) out << "," << c;
  out << "\n";
  for (size_t i = 0; i < s.points.size(); ++i) {
    out << text(s.points[i][0]) << "," << text(s.points[i][1]) << "," << text(s.points[i][2]);
    for (size_t c = 0; c < s.columns.size(); ++c) out << "," << (i < s.extra.size() && c < s.extra[i].size() ? s.extra[i][c] : "");
    out << "\n";
  }
  return out.str();
}

std::string fcsv_text(const PointSet& s) {
  std::ostringstream out;
  out << "# Markups fiducial file version = 4.11\n# CoordinateSystem = RAS\n"
         "# columns = id,x,y,z,ow,ox,oy,oz,vis,sel,lock,label,desc,associatedNodeID\n";
  for (size_t i = 0; i < s.points.size(); ++i) {
    const Point p = ras_lps(s.points[i]);
    std::string label = cell(s, i, "label");
    if (label.empty()) label = "F-" + std::to_string(i + 1);
    out << "vtkMRMLMarkupsFiducialNode_" << i << "," << text(p[0]) << "," << text(p[1]) << "," << text(p[2])
        << ",0,0,0,1,1,1,0," << label << "," << cell(s, i, "desc") << ",\n";
  }
  return out.str();
}

std::string markups_json_text(const PointSet& s) {
  nlohmann::json points = nlohmann::json::array();
  for (size_t i = 0; i < s.points.size(); ++i) {
    const Point p = ras_lps(s.points[i]);
    std::string label = cell(s, i, "label");
    if (label.empty()) label = "F-" + std::to_string(i + 1);
    points.push_back({{"id", std::to_string(i + 1)}, {"label", label}, {"description", cell(s, i, "desc")},
                      {"position", {p[0], p[1], p[2]}}, {"positionStatus", "defined"}});
  }
  const nlohmann::json j = {
      {"@schema", "https://raw.githubusercontent.com/slicer/slicer/master/Modules/Loadable/Markups/Resources/Schema/markups-schema-v1.0.3.json#"},
      {"markups", {{{"type", "Fiducial"}, {"coordinateSystem", "RAS"}, {"controlPoints", points}}}}};
  return j.dump(2) + "\n";
}

std::string vtk_text(const PointSet& s) {
  std::ostringstream out;
  out << "# vtk DataFile Version 3.0\nvtk output\nASCII\nDATASET POLYDATA\nPOINTS " << s.points.size() << " double\n";
  for (const Point& p : s.points) out << text(p[0]) << " " << text(p[1]) << " " << text(p[2]) << "\n";
  out << "VERTICES " << s.points.size() << " " << 2 * s.points.size() << "\n";
  for (size_t i = 0; i < s.points.size(); ++i) out << "1 " << i << "\n";
  return out.str();
}

std::string elastix_text(const PointSet& s, const PointFileOptions& o, bool index, double base, bool header) {
  std::ostringstream out;
  if (header) out << (index ? "index" : "point") << "\n" << s.points.size() << "\n";
  for (const Point& p : s.points) {
    const Point q = index ? point_to_index(p, *o.grid) : p;
    out << text(q[0] + (index ? base : 0)) << " " << text(q[1] + (index ? base : 0)) << " " << text(q[2] + (index ? base : 0)) << "\n";
  }
  return out.str();
}

}  // namespace

void write_points(const std::string& path, const PointSet& points, const PointFileOptions& options) {
  std::string bytes;
  switch (point_format_of(path)) {
    case PointFormat::Csv: bytes = csv_text(points); break;
    case PointFormat::Vtk: bytes = vtk_text(points); break;
    case PointFormat::Fcsv: bytes = fcsv_text(points); break;
    case PointFormat::MarkupsJson: bytes = markups_json_text(points); break;
    default:
      // A voxel-index list when a base is stated, else an elastix file (of indices with a grid).
      if (options.index_base) {
        bytes = elastix_text(points, {grid_for(options, path, "a voxel-index list's rows"), {}}, true, *options.index_base, false);
      } else {
        bytes = elastix_text(points, options, options.grid.has_value(), 0, true);
      }
  }
  try {
    base::write_file_atomically(path, bytes);
  } catch (const base::WriteError& e) {
    throw IoError(e.what());
  }
}

PointErrors point_errors(const std::vector<Point>& moved, const std::vector<Point>& targets) {
  if (moved.size() != targets.size()) {
    throw IoError("the point sets differ in size: " + std::to_string(moved.size()) + " and " + std::to_string(targets.size()));
  }
  PointErrors e;
  for (size_t i = 0; i < moved.size(); ++i) {
    const double dx = moved[i][0] - targets[i][0], dy = moved[i][1] - targets[i][1], dz = moved[i][2] - targets[i][2];
    e.distances.push_back(std::sqrt(dx * dx + dy * dy + dz * dz));
  }
  if (e.distances.empty()) return e;
  std::vector<double> sorted = e.distances;
  std::sort(sorted.begin(), sorted.end());
  double sum = 0;
  for (double d : sorted) sum += d;
  const size_t n = sorted.size();
  e.mean = sum / double(n);
  e.median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  // The 95th percentile, linear between the order statistics (numpy's default).
  const double at = 0.95 * double(n - 1);
  const size_t lo = size_t(std::floor(at));
  e.p95 = sorted[lo] + (at - double(lo)) * (sorted[std::min(lo + 1, n - 1)] - sorted[lo]);
  e.max = sorted.back();
  return e;
}


}  // namespace autoreg::io
