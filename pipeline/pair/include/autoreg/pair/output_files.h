// What the jobs' file outputs share: inputs never overwritten, output folders, and
// outputs named after their inputs. (Small text outputs: base::write_file_atomically.)
#pragma once

#include <filesystem>
#include <initializer_list>
#include <string>

#include "autoreg/base/errors.h"
#include "autoreg/io/volume.h"

namespace autoreg::pipeline {

// An output that names one of the inputs is a base::UsageError (inputs are never
// modified); empty names are not outputs.
inline void refuse_overwrite(std::initializer_list<const std::string*> outputs,
                             std::initializer_list<const std::string*> inputs) {
  for (const std::string* out : outputs) {
    for (const std::string* in : inputs) {
      if (!out->empty() && *out == *in) {
        throw base::UsageError("output " + *out + " is also an input; refusing to overwrite it");
      }
    }
  }
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

// A volume file's name without its folder and extension: "a/oasis01_t1.nii.gz" →
// "oasis01_t1" (names outputs after inputs).
inline std::string file_stem(const std::string& path) {
  const std::string trimmed = path.size() > 1 && path.back() == '/' ? path.substr(0, path.size() - 1) : path;  // a folder
  std::string name = trimmed.substr(trimmed.find_last_of('/') + 1);
  for (const std::string ext : {".nii.gz", ".nii", ".mha", ".mhd", ".nrrd", ".nhdr"}) {
    if (name.size() > ext.size() && name.compare(name.size() - ext.size(), ext.size(), ext) == 0) {
      return name.substr(0, name.size() - ext.size());
    }
  }
  const size_t dot = name.find_last_of('.');
  return dot == std::string::npos || dot == 0 ? name : name.substr(0, dot);
}

}  // namespace autoreg::pipeline
