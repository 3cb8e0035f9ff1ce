// check_header_bytes: what ITK 5.2's image readers do not survive, checked before they
// read a header (each found by fuzz_volume):
// - NIfTI-1: non-finite numbers in the orientation (quatern_*, qoffset_*, srow_*) or
//   pixdim make NiftiImageIO::ReadImageInformation call abort() (VNL's SVD asserts
//   finite input), and subnormal ones make that SVD iterate for minutes;
// - MetaImage: an ElementDataFile that does not exist, with CompressedData = True,
//   makes MetaImageIO::Read free an invalid pointer; compressed data that zlib cannot
//   finish (a preset-dictionary flag, or another error than the three MetaIO expects)
//   makes MET_PerformUncompression call inflate() forever.
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
#include <vector>

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
  // NIfTI-2 (540) is left to ITK. Anything else is read as NIfTI-1: ITK's nifti library
  // reads some headers whose sizeof_hdr is neither (fuzz_volume: 0xFE00015C), and a
  // .nii that is not NIfTI at all is refused either way.
  const uint32_t swapped = __builtin_bswap32(uint32_t(size));
  if (size == 540 || swapped == 540) return;
  const bool swap = size != 348 && swapped == 348;
  const auto number = [&](size_t at) {
    uint32_t bits;
    std::memcpy(&bits, h + at, 4);
    if (swap) bits = __builtin_bswap32(bits);
    float v;
    std::memcpy(&v, &bits, 4);
    return v;
  };
  // Each field with the largest magnitude a real header can hold: spacings and matrix
  // entries (mm per voxel) up to 10⁶, quaternion components up to 10³ (a unit quaternion's
  // are at most 1), offsets up to 10¹⁰ mm. Beyond, or subnormal, is corruption, and the
  // orientation ITK derives from it overflows float or makes VNL's SVD iterate for minutes
  // (fuzz_volume: a quatern_b of 3.6e-41).
  struct Field {
    const char* name;
    size_t at, count;
    float max;
  };
  for (const Field& fd : {Field{"pixdim", 80, 7, 1e6f}, Field{"quatern_b/c/d", 256, 3, 1e3f},
                          Field{"qoffset_x/y/z", 268, 3, 1e10f}, Field{"srow_x/y/z", 280, 12, 1e6f}}) {
    for (size_t i = 0; i < fd.count; ++i) {
      const float v = number(fd.at + 4 * i);
      if (!std::isfinite(v)) fail(path, std::string("NIfTI header has a non-finite number in ") + fd.name);
      const bool offset = fd.at == 280 && i % 4 == 3;  // srow_*[3]: the origin
      if ((v != 0 && std::fpclassify(v) == FP_SUBNORMAL) || std::abs(v) > (offset ? 1e10f : fd.max)) {
        fail(path, std::string("NIfTI header has an impossible number in ") + fd.name + " (" + std::to_string(v) + ")");
      }
    }
  }
  if (!std::isfinite(number(76))) fail(path, "NIfTI header has a non-finite number in pixdim");  // qfac
}

// The compressed voxels of a MetaImage (`bytes` bytes of `file` from `offset`; all of
// the rest when negative) must inflate to their end. MetaIO's MET_PerformUncompression
// loops until zlib says the stream ended, the input ran out or the data is corrupt, so any
// other answer (Z_NEED_DICT, Z_STREAM_ERROR) loops forever (found by fuzz_volume), and a
// stream that runs out before its end is a truncated image it accepts without a word.
void check_inflates(const std::string& path, const std::string& file, std::streamoff offset, long long bytes) {
  std::ifstream in(file, std::ios::binary | std::ios::ate);
  if (!in) fail(path, "cannot read its data file " + file);
  const std::streamoff size = in.tellg();
  const std::streamoff length = bytes < 0 ? size - offset : std::min<std::streamoff>(bytes, size - offset);
  if (length <= 0) fail(path, "truncated: no compressed voxel data");
  in.seekg(offset);
  std::vector<unsigned char> input(size_t(std::min<std::streamoff>(length, std::streamoff(1) << 20))), output(1 << 20);
  z_stream z{};
  if (inflateInit2(&z, 47) != Z_OK) fail(path, "cannot start zlib");
  std::streamoff left = length;
  int err = Z_OK;
  while (err != Z_STREAM_END) {
    if (z.avail_in == 0) {
      if (left == 0) break;
      const std::streamoff n = std::min<std::streamoff>(left, std::streamoff(input.size()));
      if (!in.read(reinterpret_cast<char*>(input.data()), n)) break;
      left -= n;
      z.next_in = input.data();
      z.avail_in = uInt(n);
    }
    z.next_out = output.data();
    z.avail_out = uInt(output.size());
    err = inflate(&z, Z_NO_FLUSH);
    if (err != Z_OK && err != Z_STREAM_END) break;
  }
  inflateEnd(&z);
  if (err == Z_STREAM_END) return;
  if (err == Z_OK || err == Z_BUF_ERROR) fail(path, "truncated: its compressed voxel data ends before the end of the stream");
  const std::string why = err == Z_NEED_DICT ? "it asks for a preset dictionary" : z.msg ? z.msg : "zlib error " + std::to_string(err);
  fail(path, "corrupt compressed voxel data (" + why + ")");
}

void check_metaimage(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string line;
  const auto trim = [](std::string& s) {
    s.erase(0, s.find_first_not_of(" \t"));
    s.erase(s.find_last_not_of(" \t\r") + 1);
  };
  bool compressed = false;
  long long compressed_size = -1;  // CompressedDataSize, when given
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
    if (key == "CompressedData") compressed = value == "True" || value == "true" || value == "1";
    if (key == "CompressedDataSize") compressed_size = std::atoll(value.c_str());
    if (key != "ElementDataFile") continue;
    for (const unsigned char c : value) {
      if (c < 0x20 || c == 0x7f) fail(path, "corrupt MetaImage header: ElementDataFile is not a file name");
    }
    const auto exists = [&](const std::string& name) {
      const fs::path data = fs::path(name).is_absolute() ? fs::path(name) : fs::path(path).parent_path() / name;
      std::error_code ec;
      if (!fs::is_regular_file(data, ec)) fail(path, "its ElementDataFile " + name + " does not exist");
    };
    const auto data_path = [&](const std::string& name) {
      return (fs::path(name).is_absolute() ? fs::path(name) : fs::path(path).parent_path() / name).string();
    };
    if (value == "LOCAL") {
      if (compressed) check_inflates(path, path, in.tellg(), compressed_size);
      return;
    }
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
    if (compressed) check_inflates(path, data_path(value), 0, compressed_size);
    return;
  }
}

}  // namespace

void check_header_bytes(const std::string& path) {
  if (is_nifti_path(path)) check_nifti(path);
  if (ends_with(path, ".mha") || ends_with(path, ".mhd")) check_metaimage(path);
}

}  // namespace autoreg::io::detail
