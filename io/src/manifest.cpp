#include "autoreg/io/manifest.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "autoreg/io/volume.h"

namespace autoreg::io {
namespace {

// Splits one CSV line; double-quoted fields may hold commas ("" is a quote).
std::vector<std::string> fields_of(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        out.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else if (c != '\r') {
      out.back() += c;
    }
  }
  for (auto& f : out) {
    const size_t b = f.find_first_not_of(" \t"), e = f.find_last_not_of(" \t");
    f = b == std::string::npos ? "" : f.substr(b, e - b + 1);
  }
  return out;
}

}  // namespace

std::vector<ManifestRow> Manifest::split(const std::string& name) const {
  std::vector<ManifestRow> out;
  for (const auto& r : rows) {
    if (r.split == name) out.push_back(r);
  }
  return out;
}

std::vector<CsvRow> read_csv(const std::string& path, const std::vector<std::string>& columns,
                             const std::vector<std::string>& required, const std::string& kind) {
  std::ifstream in(path);
  if (!in) throw IoError(path + ": cannot open the " + kind);
  std::vector<CsvRow> rows;
  std::vector<int> slot;  // file column → index in `columns`
  std::string line;
  int number = 0;
  const auto where = [&](int n) { return path + ":" + std::to_string(n) + ": "; };
  std::string names;
  for (const auto& c : columns) names += (names.empty() ? "" : ", ") + c;
  while (std::getline(in, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos || line[line.find_first_not_of(" \t")] == '#') continue;
    const std::vector<std::string> f = fields_of(line);
    if (slot.empty()) {
      std::vector<bool> seen(columns.size());
      for (const auto& name : f) {
        const auto it = std::find(columns.begin(), columns.end(), name);
        if (it == columns.end()) throw IoError(where(number) + "unknown column '" + name + "' (" + names + ")");
        const size_t k = size_t(it - columns.begin());
        if (seen[k]) throw IoError(where(number) + "column '" + name + "' appears twice");
        seen[k] = true;
        slot.push_back(int(k));
      }
      for (const auto& r : required) {
        if (std::find(f.begin(), f.end(), r) == f.end()) {
          throw IoError(where(number) + "the header line needs the '" + r + "' column (" + names + ")");
        }
      }
      continue;
    }
    if (f.size() != slot.size()) {
      throw IoError(where(number) + std::to_string(f.size()) + " fields, the header has " + std::to_string(slot.size()));
    }
    CsvRow r;
    r.line = number;
    r.fields.assign(columns.size(), "");
    for (size_t c = 0; c < f.size(); ++c) r.fields[size_t(slot[c])] = f[c];
    rows.push_back(r);
  }
  if (slot.empty()) throw IoError(path + ": empty " + kind + " (no header line)");
  return rows;
}

std::string path_beside(const std::string& csv, const std::string& field) {
  namespace fs = std::filesystem;
  if (field.empty()) return "";
  const fs::path p = fs::path(field).is_absolute() ? fs::path(field) : fs::absolute(csv).parent_path() / field;
  return p.lexically_normal().string();
}

Manifest read_manifest(const std::string& path) {
  namespace fs = std::filesystem;
  enum { kImage, kLabels, kSplit };
  const std::vector<CsvRow> rows = read_csv(path, {"image", "labels", "split"}, {"image"}, "manifest");
  Manifest m{path, {}};
  bool atlas = false;
  for (const CsvRow& row : rows) {
    const auto where = path + ":" + std::to_string(row.line) + ": ";
    ManifestRow r;
    r.line = row.line;
    const auto resolve = [&](const std::string& field) -> std::string {
      const std::string p = path_beside(path, field);
      std::error_code ec;  // a name too long for the file system is an error, not an exception
      if (!p.empty() && !fs::exists(p, ec)) {
        throw IoError(where + p + (ec ? ": cannot be a file (" + ec.message() + ")" : ": no such file"));
      }
      return p;
    };
    r.image = resolve(row.fields[kImage]);
    r.labels = resolve(row.fields[kLabels]);
    r.split = row.fields[kSplit].empty() ? "train" : row.fields[kSplit];
    if (r.split != "train" && r.split != "val" && r.split != "test" && r.split != "atlas") {
      throw IoError(where + "unknown split '" + r.split + "' (train, val, test or atlas)");
    }
    if (r.image.empty() && r.labels.empty()) throw IoError(where + "a row needs an image or a label map");
    if (r.split == "atlas") {
      if (atlas) throw IoError(where + "a second atlas row (one atlas at most)");
      if (r.image.empty()) throw IoError(where + "the atlas needs an image");
      atlas = true;
    }
    m.rows.push_back(r);
  }
  if (m.rows.empty()) throw IoError(path + ": the manifest lists no subjects");
  return m;
}

}  // namespace autoreg::io
