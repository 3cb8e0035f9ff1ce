// Small text outputs (genotypes, reports, manifests) written atomically.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

#include "autoreg/io/volume.h"

namespace autoreg::apps {

// Writes `text` to `path` through a temporary file renamed into place.
inline void write_text_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc | std::ios::binary);
    out << text;
    if (!(out << std::flush)) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      throw io::IoError(path + ": cannot write");
    }
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace autoreg::apps
