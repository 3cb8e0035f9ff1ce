#include "atomic_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace autoreg::qc::detail {

namespace {

// "out/pair.png" → "out/pair.png.tmp-<pid>.png": beside the output (rename stays within
// one file system) and ending in the output's extension.
std::string temporary_path(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  const size_t dot = path.find_last_of('.');
  const bool has_extension = dot != std::string::npos && (slash == std::string::npos || dot > slash);
  return path + ".tmp-" + std::to_string(::getpid()) + (has_extension ? path.substr(dot) : "");
}

}  // namespace

void write_atomically(const std::string& path, const std::function<void(const std::string&)>& write) {
  const std::string tmp = temporary_path(path);
  try {
    write(tmp);
  } catch (const std::exception& e) {
    std::remove(tmp.c_str());
    throw std::runtime_error(path + ": " + e.what());
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw std::runtime_error(path + ": cannot rename the temporary file into place (" + why + ")");
  }
}

}  // namespace autoreg::qc::detail
