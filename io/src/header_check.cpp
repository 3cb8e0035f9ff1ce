// check_header_bytes: what ITK 5.2's image readers do not survive, checked before they
// read a header (each found by fuzz_volume):
// - NIfTI-1: non-finite numbers in the orientation (quatern_*, qoffset_*, srow_*) or
//   pixdim make NiftiImageIO::ReadImageInformation call abort() (VNL's SVD asserts
//   finite input);
// - MetaImage: an ElementDataFile that does not exist, with CompressedData = True,
//   makes MetaImageIO::Read free an invalid pointer.
#include <zlib.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "autoreg/io/volume.h"
#include "nifti_file.h"
#include "itk_bridge.h"

namespace autoreg::io::detail {
namespace {

void check_nifti(const std::string& path) {
  unsigned char h[348];
  gzFile f = gzopen(path.c_str(), "rb");  // reads uncompressed files as they are
  if (!f) fail(path, "not readable");
  const int got = gzread(f, h, sizeof h);
  gzclose(f);
  if (got < int(sizeof h)) return;  // ITK says what is wrong with a short or foreign file
  int32_t size;
  std::memcpy(&size, h, 4);
  const bool swap = size != 348;
  if (swap && __builtin_bswap32(uint32_t(size)) != 348) return;  // not NIfTI-1 (NIfTI-2: ITK)
  const auto number = [&](size_t at) {
    uint32_t bits;
    std::memcpy(&bits, h + at, 4);
    if (swap) bits = __builtin_bswap32(bits);
    float v;
    std::memcpy(&v, &bits, 4);
    return v;
  };
  struct Field {
    const char* name;
    size_t at, count;
  };
  for (const Field& fd : {Field{"pixdim", 76, 8}, Field{"quatern_b/c/d and qoffset_x/y/z", 256, 6},
                          Field{"srow_x/y/z", 280, 12}}) {
    for (size_t i = 0; i < fd.count; ++i) {
      if (!std::isfinite(number(fd.at + 4 * i))) {
        fail(path, std::string("NIfTI header has a non-finite number in ") + fd.name);
      }
    }
  }
}

void check_metaimage(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string line;
  const auto trim = [](std::string& s) {
    s.erase(0, s.find_first_not_of(" \t"));
    s.erase(s.find_last_not_of(" \t\r") + 1);
  };
  for (int n = 1; n <= 200 && std::getline(in, line); ++n) {
    // Every header line is "Key = Value" (MetaIO otherwise looks for the '=' on later
    // lines and reads the wrong numbers: fuzz_volume found a header it parsed for minutes).
    trim(line);
    if (line.empty()) continue;
    const size_t eq = line.find('=');
    std::string key = line.substr(0, eq), value = eq == std::string::npos ? "" : line.substr(eq + 1);
    trim(key);
    trim(value);
    if (eq == std::string::npos || key.empty() ||
        key.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") != std::string::npos) {
      fail(path, "corrupt MetaImage header: line " + std::to_string(n) + " is not 'Key = Value'");
    }
    if (key == "NDims") {
      char* end = nullptr;
      const long dims = std::strtol(value.c_str(), &end, 10);
      if (end == value.c_str() || *end != '\0' || dims < 1 || dims > 16) {
        fail(path, "corrupt MetaImage header: NDims = " + value.substr(0, 40));
      }
    }
    if (key != "ElementDataFile") continue;
    for (const unsigned char c : value) {
      if (c < 0x20 || c == 0x7f) fail(path, "corrupt MetaImage header: ElementDataFile is not a file name");
    }
    const auto exists = [&](const std::string& name) {
      const fs::path data = fs::path(name).is_absolute() ? fs::path(name) : fs::path(path).parent_path() / name;
      std::error_code ec;
      if (!fs::is_regular_file(data, ec)) fail(path, "its ElementDataFile " + name + " does not exist");
    };
    if (value == "LOCAL") return;
    if (value.rfind("LIST", 0) == 0) {  // one file name per line after this one
      for (std::string name; std::getline(in, name);) {
        trim(name);
        if (!name.empty()) exists(name);
      }
      return;
    }
    if (value.find('%') != std::string::npos) {  // "pattern first last step": the first file
      std::istringstream words(value);
      std::string pattern;
      long first = 0;
      const bool read = bool(words >> pattern >> first);
      const size_t pc = pattern.find('%');
      const size_t conv = pc == std::string::npos ? pc : pattern.find_first_not_of("0123456789", pc + 1);
      if (!read || std::count(pattern.begin(), pattern.end(), '%') != 1 || conv == std::string::npos || (pattern[conv] != 'd' && pattern[conv] != 'i') || conv - pc > 4) {
        fail(path, "corrupt MetaImage header: ElementDataFile pattern '" + value + "'");
      }
      char name[4096];
      std::snprintf(name, sizeof name, pattern.c_str(), int(first));  // NOLINT: one %d or %i, checked above
      exists(name);
      return;
    }
    exists(value);
    return;
  }
}

}  // namespace

void check_header_bytes(const std::string& path) {
  if (is_nifti_path(path)) check_nifti(path);
  if (ends_with(path, ".mha") || ends_with(path, ".mhd")) check_metaimage(path);
}

}  // namespace autoreg::io::detail
