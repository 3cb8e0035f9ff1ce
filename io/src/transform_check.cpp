// Transform files checked before ITK's readers see them (both found by fuzz_transform).
//
// check_hdf5_transform: an ITK .h5 transform file's parameters checked with the HDF5 C
// library. ITK hands the fixed parameters straight to the
// transform: a non-finite direction makes VNL call abort() (found by fuzz_transform), and
// a displacement field's size is allocated as declared, before any check that the file
// holds that many parameters.
#include <hdf5.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "autoreg/io/volume.h"
#include "itk_bridge.h"

namespace autoreg::io::detail {
namespace {

struct Handle {
  hid_t id;
  herr_t (*close)(hid_t);
  ~Handle() {
    if (id >= 0) close(id);
  }
};

// The doubles of dataset `name` in group `g`, or none when it is absent; throws IoError
// when it is there but not a one-dimensional array of at most `max` numbers.
std::vector<double> read_doubles(const std::string& path, hid_t g, const std::string& name, hsize_t max) {
  if (H5Lexists(g, name.c_str(), H5P_DEFAULT) <= 0) return {};
  const Handle d{H5Dopen2(g, name.c_str(), H5P_DEFAULT), H5Dclose};
  if (d.id < 0) fail(path, "corrupt HDF5 transform: cannot open " + name);
  const Handle space{H5Dget_space(d.id), H5Sclose};
  hsize_t n = 0;
  if (space.id < 0 || H5Sget_simple_extent_ndims(space.id) != 1 || H5Sget_simple_extent_dims(space.id, &n, nullptr) != 1) {
    fail(path, "corrupt HDF5 transform: " + name + " is not a list of numbers");
  }
  if (n > max) fail(path, name + " holds " + std::to_string(n) + " numbers, more than the size limit allows");
  std::vector<double> v(n);
  if (n > 0 && H5Dread(d.id, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()) < 0) {
    fail(path, "corrupt HDF5 transform: cannot read " + name);
  }
  return v;
}

// The size of an HDF5 "length" field in this file (2, 4 or 8 bytes), from the first
// superblock (at byte 0, 512, 1024, 2048, ...); 8 when none is found (HDF5 refuses the file).
unsigned hdf5_length_size(std::ifstream& in, uint64_t file_size) {
  static const unsigned char kSignature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  for (uint64_t at = 0; at + 16 <= file_size; at = at ? at * 2 : 512) {
    unsigned char b[16];
    in.seekg(std::streamoff(at));
    if (!in.read(reinterpret_cast<char*>(b), sizeof b)) break;
    if (std::memcmp(b, kSignature, 8) != 0) continue;
    const unsigned version = b[8];
    return version <= 1 ? b[14] : b[10];  // v0/v1: 6 version bytes first; v2/v3: sizes follow the version
  }
  return 8;
}

uint64_t decode_le(const unsigned char* p, unsigned bytes) {
  uint64_t v = 0;
  for (unsigned i = bytes; i-- > 0;) v = (v << 8) | p[i];
  return v;
}

// HDF5's global heap collections ("GCOL"), which hold variable-length data such as ITK's
// TransformType strings, walked the way HDF5 1.10 decodes them
// (H5HG__cache_heap_deserialize) before HDF5 does. HDF5 steps from object to object by each
// object's declared size without checking it: a size of 0 on the free-space object, or one
// that wraps around, sends it back to the same bytes forever (found by fuzz_transform: a
// crafted file hung `apply` in H5Dread). In a valid file the objects tile the collection
// exactly. The whole file is scanned for the signature, so every collection HDF5 could load
// is seen; a "GCOL" that is not followed by version 1, zero reserved bytes and a size of
// at least 4096 that fits the file is data, not a collection.
void check_hdf5_global_heaps(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) fail(path, "not readable");
  const uint64_t file_size = uint64_t(in.tellg());
  const unsigned length = hdf5_length_size(in, file_size);
  if (length != 2 && length != 4 && length != 8) fail(path, "corrupt HDF5 superblock (size of lengths " + std::to_string(length) + ")");
  const uint64_t header = 8 + length, object_header = 8 + length;
  std::ifstream heap(path, std::ios::binary);
  std::vector<char> block(size_t(1) << 22);
  std::vector<unsigned char> chunk;
  in.clear();
  in.seekg(0);
  for (uint64_t base = 0; base < file_size;) {
    const size_t n = size_t(std::min<uint64_t>(block.size(), file_size - base));
    if (!in.read(block.data(), std::streamsize(n))) fail(path, "not readable");
    for (size_t i = 0; i + 4 <= n; ++i) {
      if (std::memcmp(&block[i], "GCOL", 4) != 0) continue;
      const uint64_t at = base + i;
      unsigned char h[16] = {};
      heap.clear();
      heap.seekg(std::streamoff(at));
      if (!heap.read(reinterpret_cast<char*>(h), std::streamsize(header))) continue;
      const uint64_t size = decode_le(h + 8, length);
      if (h[4] != 1 || h[5] || h[6] || h[7] || size < 4096 || size > file_size - at) continue;
      chunk.resize(size_t(size));
      heap.seekg(std::streamoff(at));
      if (!heap.read(reinterpret_cast<char*>(chunk.data()), std::streamsize(size))) fail(path, "not readable");
      for (uint64_t p = header; p < size;) {
        if (p + object_header > size) break;  // a tail too small for an object is free space
        const unsigned index = chunk[p] | (chunk[p + 1] << 8);
        const uint64_t declared = decode_le(&chunk[p + 8], length);
        // Object 0 is the free space, its size counting its header; the others are padded to 8.
        const uint64_t need = index > 0 ? object_header + ((declared + 7) & ~uint64_t(7)) : declared;
        if (need < object_header || (index > 0 && declared > size) || need > size - p) {
          fail(path, "corrupt HDF5 file: global heap collection at byte " + std::to_string(at) + " has an object of size " +
                         std::to_string(declared) + " that does not fit it");
        }
        p += need;
      }
    }
    // Keep the last 3 bytes so that a signature across two blocks is seen.
    const uint64_t step = n > 3 && base + n < file_size ? n - 3 : n;
    base += step;
    in.seekg(std::streamoff(base));
  }
}

}  // namespace

void check_hdf5_transform(const std::string& path) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // HDF5's own error stack printing
  if (H5Fis_hdf5(path.c_str()) <= 0) fail(path, "not an HDF5 file");
  check_hdf5_global_heaps(path);
  const Handle file{H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose};
  if (file.id < 0) fail(path, "corrupt HDF5 file");
  if (H5Lexists(file.id, "/TransformGroup", H5P_DEFAULT) <= 0) fail(path, "not an ITK transform file (no /TransformGroup)");
  const hsize_t max_numbers = max_volume_bytes() / sizeof(double);
  for (int i = 0;; ++i) {
    const std::string group = "/TransformGroup/" + std::to_string(i);
    if (H5Lexists(file.id, group.c_str(), H5P_DEFAULT) <= 0) break;
    const Handle g{H5Gopen2(file.id, group.c_str(), H5P_DEFAULT), H5Gclose};
    if (g.id < 0) fail(path, "corrupt HDF5 transform: cannot open " + group);
    const std::vector<double> fixed = read_doubles(path, g.id, "TransformFixedParameters", 1 << 16);
    const std::vector<double> params = read_doubles(path, g.id, "TransformParameters", max_numbers);
    for (const auto* v : {&fixed, &params}) {
      for (double x : *v) {
        if (!std::isfinite(x)) fail(path, "transform " + std::to_string(i) + " has non-finite parameters");
      }
    }
    // A displacement field's fixed parameters (ITK): size (3), origin (3), spacing (3),
    // direction (9); its parameters are 3 numbers per voxel.
    if (fixed.size() == 18) {
      double voxels = 1;
      for (int a = 0; a < 3; ++a) {
        if (!(fixed[a] >= 1 && fixed[a] == std::floor(fixed[a]))) fail(path, "transform " + std::to_string(i) + ": a field size is not a positive integer");
        if (!(fixed[6 + a] > 0)) fail(path, "transform " + std::to_string(i) + ": a field spacing is not positive");
        voxels *= fixed[a];
      }
      if (voxels * 3 != double(params.size())) {
        fail(path, "transform " + std::to_string(i) + ": the field's size (" + std::to_string(voxels) + " voxels) does not match its " +
                       std::to_string(params.size()) + " parameters");
      }
    }
  }
}

// check_matlab_transform: the Matlab v4 matrices of an ITK .mat transform file, each a
// 20-byte header (type, rows, columns, imaginary flag, name length), the name, then the
// numbers. ITK (vnl_matlab_read) allocates rows × columns as declared: a 200-byte file
// that declares 2.4·10⁹ rows took 22 GB before anything checked it against the file.
void check_matlab_transform(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) fail(path, "not readable");
  const uint64_t size = uint64_t(in.tellg());
  in.seekg(0);
  uint64_t at = 0;
  int matrices = 0;
  while (at < size) {
    unsigned char h[20];
    if (size - at < sizeof h || !in.read(reinterpret_cast<char*>(h), sizeof h)) {
      fail(path, "truncated Matlab v4 matrix header at byte " + std::to_string(at));
    }
    uint32_t f[5];
    std::memcpy(f, h, sizeof f);
    // The type MOPT: M the byte order (0 little-, 1 big-endian), O 0, P the precision
    // (double, float, int32, int16, uint16, uint8), T 0–2. Read little-endian first.
    const auto valid = [](uint32_t t) { return t < 2000 && (t % 1000) / 100 == 0 && (t % 100) / 10 <= 5 && t % 10 <= 2; };
    if (!(valid(f[0]) && f[0] < 1000)) {
      for (auto& v : f) v = __builtin_bswap32(v);
      if (!(valid(f[0]) && f[0] >= 1000)) {
        fail(path, "not a Matlab v4 transform file (matrix " + std::to_string(matrices) + " has no valid type)");
      }
    }
    const uint32_t rows = f[1], cols = f[2], imaginary = f[3], name = f[4];
    const uint32_t precision = (f[0] % 100) / 10;
    static const uint64_t kBytes[] = {8, 4, 4, 2, 2, 1};
    if (imaginary > 1) fail(path, "not a Matlab v4 transform file (matrix " + std::to_string(matrices) + ")");
    const long double bytes = (long double)rows * cols * kBytes[precision] * (imaginary ? 2 : 1) + name;
    if (bytes > (long double)(size - at - sizeof h)) {
      fail(path, "matrix " + std::to_string(matrices) + " declares " + std::to_string(rows) + "×" + std::to_string(cols) +
                     " numbers, more than the file holds (truncated or corrupt)");
    }
    at += sizeof h + uint64_t(bytes);
    in.seekg(std::streamoff(at));
    ++matrices;
  }
}

}  // namespace autoreg::io::detail
