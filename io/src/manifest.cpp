#include "autoreg/io/manifest.h"

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

Manifest read_manifest(const std::string& path) {
  namespace fs = std::filesystem;
  std::ifstream in(path);
  if (!in) throw IoError(path + ": cannot open the manifest");
  const fs::path folder = fs::absolute(path).parent_path();
  Manifest m{path, {}};
  std::string line;
  int number = 0, image = -1, labels = -1, split = -1;
  size_t columns = 0;
  bool atlas = false;
  const auto where = [&](int n) { return path + ":" + std::to_string(n) + ": "; };
  while (std::getline(in, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos || line[line.find_first_not_of(" \t")] == '#') continue;
    const std::vector<std::string> f = fields_of(line);
    if (columns == 0) {
      for (size_t c = 0; c < f.size(); ++c) {
        int* slot = f[c] == "image" ? &image : f[c] == "labels" ? &labels : f[c] == "split" ? &split : nullptr;
        if (!slot) throw IoError(where(number) + "unknown column '" + f[c] + "' (image, labels, split)");
        if (*slot >= 0) throw IoError(where(number) + "column '" + f[c] + "' appears twice");
        *slot = int(c);
      }
      if (image < 0) throw IoError(where(number) + "the header line needs an 'image' column (image,labels,split)");
      columns = f.size();
      continue;
    }
    if (f.size() != columns) {
      throw IoError(where(number) + std::to_string(f.size()) + " fields, the header has " + std::to_string(columns));
    }
    ManifestRow r;
    r.line = number;
    const auto resolve = [&](int column) -> std::string {
      if (column < 0 || f[column].empty()) return "";
      const fs::path p = fs::path(f[column]).is_absolute() ? fs::path(f[column]) : folder / f[column];
      std::error_code ec;  // a name too long for the file system is an error, not an exception
      if (!fs::exists(p, ec)) {
        throw IoError(where(number) + p.string() + (ec ? ": cannot be a file (" + ec.message() + ")" : ": no such file"));
      }
      return p.lexically_normal().string();
    };
    r.image = resolve(image);
    r.labels = resolve(labels);
    r.split = split < 0 || f[split].empty() ? "train" : f[split];
    if (r.split != "train" && r.split != "val" && r.split != "test" && r.split != "atlas") {
      throw IoError(where(number) + "unknown split '" + r.split + "' (train, val, test or atlas)");
    }
    if (r.image.empty() && r.labels.empty()) throw IoError(where(number) + "a row needs an image or a label map");
    if (r.split == "atlas") {
      if (atlas) throw IoError(where(number) + "a second atlas row (one atlas at most)");
      if (r.image.empty()) throw IoError(where(number) + "the atlas needs an image");
      atlas = true;
    }
    m.rows.push_back(r);
  }
  if (columns == 0) throw IoError(path + ": empty manifest (no header line)");
  if (m.rows.empty()) throw IoError(path + ": the manifest lists no subjects");
  return m;
}

}  // namespace autoreg::io
