// What every fuzz target shares: the input's bytes written to a file (the readers take
// paths, as the command line gives them) and the rule for what a reader may do with them.
//
// A reader given any bytes either returns or throws the error type it documents for bad
// input (IoError, ModelFileError, std::invalid_argument for genotypes); anything else is a
// finding: a crash or sanitizer report (libFuzzer sees it), or another exception type
// (std::out_of_range, std::bad_alloc, c10::Error: it would reach the user as a failure,
// exit 3, instead of a message about the file), which aborts here so libFuzzer keeps the
// input.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <typeinfo>

namespace autoreg::fuzz {

// A file that holds `size` bytes of `data`, named …/input<ext> in a folder of this
// process's own (libFuzzer may run jobs side by side).
inline std::string as_file(const uint8_t* data, size_t size, const std::string& ext) {
  static const std::filesystem::path dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::filesystem::path d = std::filesystem::path(tmp ? tmp : "/tmp") / ("autoreg-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  const std::string path = (dir / ("input" + ext)).string();
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), std::streamsize(size));
  return path;
}

// Runs read(); a documented bad-input error of type Allowed is the expected answer, any
// other exception aborts (a finding).
template <typename Allowed, typename Read>
void expect_clean(const Read& read) {
  try {
    read();
  } catch (const Allowed&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: undocumented %s: %s\n", typeid(e).name(), e.what());
    std::abort();
  }
}

}  // namespace autoreg::fuzz
