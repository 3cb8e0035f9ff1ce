// Point files read (io/points.h): CSV, elastix, voxel-index lists, VTK, Slicer markups.
// No LibTorch here.
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <sstream>

#include "point_detail.h"

namespace autoreg::io {
namespace {

using namespace point_detail;

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r\n"), b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, sep)) out.push_back(trim(cell));
  if (!line.empty() && line.back() == sep) out.push_back("");
  return out;
}

std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// A coordinate of row `row` (1-based line number) of `path`.
double number(const std::string& text, const std::string& path, size_t row) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size()) {
    throw IoError(path + " line " + std::to_string(row) + ": '" + text + "' is not a number");
  }
  if (!std::isfinite(v)) throw IoError(path + " line " + std::to_string(row) + ": a coordinate is not finite");
  return v;
}

std::vector<std::pair<size_t, std::string>> lines_of(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw IoError(path + ": cannot open the point file");
  std::vector<std::pair<size_t, std::string>> out;
  size_t n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    out.emplace_back(n, line);
  }
  return out;
}


PointSet read_csv(const std::string& path) {
  const auto lines = lines_of(path);
  PointSet s;
  bool header = false;
  std::array<int, 3> at{-1, -1, -1};
  std::vector<size_t> rest;
  for (const auto& [row, line] : lines) {
    if (trim(line).empty()) continue;
    const auto cells = split(line, ',');
    if (!header) {
      header = true;
      for (size_t c = 0; c < cells.size(); ++c) {
        const std::string name = lower(cells[c]);
        if (name == "x" || name == "y" || name == "z") at[name[0] - 'x'] = int(c);
        else {
          rest.push_back(c);
          s.columns.push_back(cells[c]);
        }
      }
      if (at[0] < 0 || at[1] < 0 || at[2] < 0) {
        throw IoError(path + " line " + std::to_string(row) + ": a point CSV needs the columns x,y,z (LPS mm), as ANTs writes them");
      }
      continue;
    }
    const size_t wanted = s.columns.size() + 3;
    if (cells.size() != wanted) {
      throw IoError(path + " line " + std::to_string(row) + ": " + std::to_string(cells.size()) + " columns, the header has " +
                    std::to_string(wanted));
    }
    s.points.push_back({number(cells[at[0]], path, row), number(cells[at[1]], path, row), number(cells[at[2]], path, row)});
    std::vector<std::string> extra;
    for (size_t c : rest) extra.push_back(cells[c]);
    s.extra.push_back(extra);
  }
  if (!header) throw IoError(path + ": empty point file (a CSV needs a header x,y,z)");
  return s;
}

// An elastix file (`point`/`index`, a count, rows) or, without that header, a voxel-index list.
PointSet read_text(const std::string& path, const PointFileOptions& o) {
  auto lines = lines_of(path);
  std::vector<std::pair<size_t, std::string>> rows;
  for (auto& l : lines) {
    if (!trim(l.second).empty()) rows.push_back(l);
  }
  PointSet s;
  const std::string first = rows.empty() ? "" : lower(trim(rows.front().second));
  const bool elastix = first == "point" || first == "index";
  size_t start = 0;
  if (elastix) {
    if (rows.size() < 2) throw IoError(path + ": an elastix point file needs a count on its second line");
    const double count = number(trim(rows[1].second), path, rows[1].first);
    if (count < 0 || count != std::floor(count)) throw IoError(path + " line " + std::to_string(rows[1].first) + ": the count is not a whole number");
    if (size_t(count) != rows.size() - 2) {
      throw IoError(path + " line " + std::to_string(rows[1].first) + ": the count says " + std::to_string(size_t(count)) +
                    " points, the file has " + std::to_string(rows.size() - 2));
    }
    start = 2;
  } else if (!o.index_base) {
    throw IoError(path + ": neither an elastix point file (first line 'point' or 'index') nor, without a stated "
                         "index base (0 or 1), a voxel-index list");
  }
  const bool indices = !elastix || first == "index";
  const Geometry* g = indices ? &grid_for(o, path, elastix ? "its points" : "a voxel-index list's rows") : nullptr;
  const double base = elastix ? 0.0 : double(*o.index_base);
  for (size_t r = start; r < rows.size(); ++r) {
    auto cells = words(rows[r].second);
    if (!elastix && cells.size() == 1) cells = split(rows[r].second, ',');
    if (cells.size() != 3) {
      throw IoError(path + " line " + std::to_string(rows[r].first) + ": " + std::to_string(cells.size()) +
                    " values where a point has 3");
    }
    Point p{number(cells[0], path, rows[r].first), number(cells[1], path, rows[r].first), number(cells[2], path, rows[r].first)};
    if (indices) p = index_to_point({p[0] - base, p[1] - base, p[2] - base}, *g);
    s.points.push_back(p);
    s.extra.emplace_back();
  }
  return s;
}

PointSet read_vtk(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw IoError(path + ": cannot open the point file");
  std::string line;
  size_t row = 0;
  bool ascii = false;
  while (std::getline(in, line)) {
    ++row;
    const std::string t = trim(line);
    if (t == "ASCII") ascii = true;
    if (t == "BINARY") throw IoError(path + ": a binary VTK file (only ASCII legacy files are read)");
    const auto w = words(t);
    if (w.size() == 3 && w[0] == "POINTS") {
      if (!ascii) throw IoError(path + ": not an ASCII legacy VTK file");
      const double count = number(w[1], path, row);
      PointSet s;
      std::vector<double> values;
      while (values.size() < size_t(count) * 3 && std::getline(in, line)) {
        ++row;
        for (const auto& v : words(line)) values.push_back(number(v, path, row));
      }
      if (values.size() != size_t(count) * 3) {
        throw IoError(path + ": POINTS says " + std::to_string(size_t(count)) + " points, the file has " +
                      std::to_string(values.size() / 3) + (values.size() % 3 ? " and a part" : ""));
      }
      for (size_t i = 0; i < values.size(); i += 3) {
        s.points.push_back({values[i], values[i + 1], values[i + 2]});
        s.extra.emplace_back();
      }
      return s;
    }
  }
  throw IoError(path + ": no POINTS section (a legacy VTK POLYDATA file)");
}

PointSet read_fcsv(const std::string& path) {
  bool ras = true;  // Slicer's default
  PointSet s;
  s.columns = {"label", "desc"};
  for (const auto& [row, line] : lines_of(path)) {
    const std::string t = trim(line);
    if (t.empty()) continue;
    if (t[0] == '#') {
      const size_t eq = t.find('=');
      if (t.find("CoordinateSystem") != std::string::npos && eq != std::string::npos) {
        const std::string v = trim(t.substr(eq + 1));
        if (v == "RAS" || v == "0") ras = true;
        else if (v == "LPS" || v == "1") ras = false;
        else throw IoError(path + " line " + std::to_string(row) + ": coordinate system '" + v + "' (RAS or LPS)");
      }
      continue;
    }
    const auto cells = split(t, ',');
    if (cells.size() < 4) throw IoError(path + " line " + std::to_string(row) + ": a markup row needs id,x,y,z");
    Point p{number(cells[1], path, row), number(cells[2], path, row), number(cells[3], path, row)};
    s.points.push_back(ras ? ras_lps(p) : p);
    s.extra.push_back({cells.size() > 11 ? cells[11] : "", cells.size() > 12 ? cells[12] : ""});
  }
  return s;
}

PointSet read_markups_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw IoError(path + ": cannot open the point file");
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.contains("markups") || !j["markups"].is_array() || j["markups"].empty()) {
    throw IoError(path + ": not a Slicer markups file (no 'markups' list)");
  }
  const auto& m = j["markups"][0];
  const std::string system = m.value("coordinateSystem", std::string("LPS"));
  if (system != "RAS" && system != "LPS") throw IoError(path + ": coordinate system '" + system + "' (RAS or LPS)");
  PointSet s;
  s.columns = {"label", "desc"};
  if (!m.contains("controlPoints")) return s;
  size_t i = 0;
  for (const auto& c : m["controlPoints"]) {
    const std::string where = path + " control point " + std::to_string(i++);
    if (!c.contains("position") || !c["position"].is_array() || c["position"].size() != 3) {
      throw IoError(where + ": no position of 3 numbers");
    }
    Point p;
    for (int k = 0; k < 3; ++k) {
      if (!c["position"][k].is_number()) throw IoError(where + ": the position is not numbers");
      p[k] = c["position"][k].get<double>();
      if (!std::isfinite(p[k])) throw IoError(where + ": a coordinate is not finite");
    }
    s.points.push_back(system == "RAS" ? ras_lps(p) : p);
    s.extra.push_back({c.value("label", std::string()), c.value("description", std::string())});
  }
  return s;
}

}  // namespace

const char* to_string(PointFormat f) {
  switch (f) {
    case PointFormat::Csv: return "csv";
    case PointFormat::Elastix: return "elastix";
    case PointFormat::Vtk: return "vtk";
    case PointFormat::Fcsv: return "fcsv";
    case PointFormat::MarkupsJson: return "mrk.json";
    case PointFormat::VoxelIndex: break;
  }
  return "voxel-index";
}

PointFormat point_format_of(const std::string& path) {
  const std::string p = lower(path);
  if (ends_with(p, ".csv")) return PointFormat::Csv;
  if (ends_with(p, ".vtk")) return PointFormat::Vtk;
  if (ends_with(p, ".fcsv")) return PointFormat::Fcsv;
  if (ends_with(p, ".mrk.json")) return PointFormat::MarkupsJson;
  if (ends_with(p, ".txt") || ends_with(p, ".pts")) return PointFormat::Elastix;
  throw IoError(path + ": not a point file name (.csv, .txt or .pts, .vtk, .fcsv, .mrk.json)");
}

PointSet read_points(const std::string& path, const PointFileOptions& options) {
  switch (point_format_of(path)) {
    case PointFormat::Csv: return read_csv(path);
    case PointFormat::Vtk: return read_vtk(path);
    case PointFormat::Fcsv: return read_fcsv(path);
    case PointFormat::MarkupsJson: return read_markups_json(path);
    default: return read_text(path, options);
  }
}

Landmarks read_landmarks(const std::string& fixed, const std::string& moving, const PointFileOptions& options) {
  Landmarks l{read_points(fixed, options), read_points(moving, options)};
  if (l.fixed.points.size() != l.moving.points.size()) {
    throw IoError(moving + ": " + std::to_string(l.moving.points.size()) + " points, " + fixed + " has " +
                  std::to_string(l.fixed.points.size()) + " (the same points in the same order)");
  }
  return l;
}

}  // namespace autoreg::io
