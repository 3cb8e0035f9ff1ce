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

// A folder for outputs, made when missing; a file at its path is refused (IoError naming
// `option`).
inline void make_output_folder(const std::string& option, const std::string& dir) {
  std::error_code ec;
  if (std::filesystem::exists(dir, ec) && !std::filesystem::is_directory(dir, ec)) {
    throw io::IoError(dir + ": " + option + " is a file, not a folder");
  }
  std::filesystem::create_directories(dir, ec);
  if (ec) throw io::IoError(dir + ": cannot create the folder (" + ec.message() + ")");
}

}  // namespace autoreg::apps
