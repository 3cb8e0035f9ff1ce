// check_input_stream: a .gz file read to its end through zlib's inflate (or a .nii file
// read as it is), 1 MiB at a time, with NIfTI float voxels checked on the way.
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "autoreg/io/volume.h"
#include "nifti_file.h"
#include "gzip_file.h"

namespace autoreg::io::detail {
namespace {

// Counts non-finite float32/float64 voxels of a NIfTI-1 stream fed in pieces: the header
// (its first 348 bytes) gives datatype, byte order and vox_offset; nifti1_io (ITK's NIfTI
// reader) sets such voxels to 0 without a word.
class NiftiFloatScan {
 public:
  void feed(const unsigned char* p, size_t n) {
    while (n > 0) {
      if (offset_ < 348) {
        const size_t take = std::min<size_t>(n, 348 - offset_);
        header_.insert(header_.end(), p, p + take);
        consume(take, p, n);
        if (offset_ == 348) parse_header();
        continue;
      }
      if (width_ == 0 || offset_ >= end_) return;
      if (offset_ < begin_) {
        consume(std::min<uint64_t>(n, begin_ - offset_), p, n);
        continue;
      }
      const size_t take = size_t(std::min<uint64_t>(n, end_ - offset_));
      scan(p, take);
      consume(take, p, n);
    }
  }
  uint64_t non_finite() const { return non_finite_; }

 private:
  void consume(uint64_t k, const unsigned char*& p, size_t& n) {
    p += k;
    n -= size_t(k);
    offset_ += k;
  }
  template <typename T>
  T field(size_t at) const {
    T v;
    std::memcpy(&v, header_.data() + at, sizeof v);
    if (swap_) {
      auto* b = reinterpret_cast<unsigned char*>(&v);
      std::reverse(b, b + sizeof v);
    }
    return v;
  }
  void parse_header() {
    int32_t size;
    std::memcpy(&size, header_.data(), 4);
    swap_ = size != 348;
    if (field<int32_t>(0) != 348) return;  // not NIfTI-1 (or Analyze): nothing checked
    const int16_t datatype = field<int16_t>(70);
    width_ = datatype == 16 ? 4 : datatype == 64 ? 8 : 0;  // FLOAT32, FLOAT64
    uint64_t voxels = 1;
    const int16_t dims = field<int16_t>(40);
    for (int d = 1; d <= dims && d <= 7; ++d) voxels *= uint64_t(std::max<int16_t>(1, field<int16_t>(40 + 2 * d)));
    // vox_offset is a float: anything not a sane byte offset leaves the voxels to ITK
    // (fuzz_volume: 7·10³¹ overflowed the conversion).
    const float offset = field<float>(108);
    if (!(offset < float(uint64_t(1) << 40)) || voxels > (uint64_t(1) << 40)) {
      width_ = 0;
      return;
    }
    begin_ = uint64_t(std::max(352.0f, offset));
    end_ = begin_ + voxels * width_;
  }
  void scan(const unsigned char* p, size_t n) {
    // Elements may straddle the pieces: the bytes of a partial one wait in carry_.
    while (n > 0) {
      if (!carry_.empty() || n < width_) {
        const size_t take = std::min(n, width_ - carry_.size());
        carry_.insert(carry_.end(), p, p + take);
        p += take;
        n -= take;
        if (carry_.size() == width_) {
          check(carry_.data());
          carry_.clear();
        }
        continue;
      }
      const size_t whole = n / width_ * width_;
      for (size_t i = 0; i < whole; i += width_) check(p + i);
      p += whole;
      n -= whole;
    }
  }
  void check(const unsigned char* e) {
    // An all-ones exponent is NaN or infinity in either byte order's top bytes.
    const unsigned char hi = swap_ ? e[0] : e[width_ - 1], next = swap_ ? e[1] : e[width_ - 2];
    const bool bad = width_ == 4 ? (hi & 0x7f) == 0x7f && (next & 0x80) : (hi & 0x7f) == 0x7f && (next & 0xf0) == 0xf0;
    non_finite_ += bad;
  }

  std::vector<unsigned char> header_, carry_;
  uint64_t offset_ = 0, begin_ = 0, end_ = 0, non_finite_ = 0;
  size_t width_ = 0;
  bool swap_ = false;
};

}  // namespace

void check_input_stream(const std::string& path, uint64_t min_bytes) {
  const bool gz = ends_with(path, ".gz"), nifti = is_nifti_path(path);
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) throw IoError(path + ": not readable");
  z_stream z{};
  if (gz && inflateInit2(&z, 15 + 16) != Z_OK) throw std::bad_alloc();  // gzip members only
  std::unique_ptr<z_stream, int (*)(z_streamp)> guard(gz ? &z : nullptr, &inflateEnd);
  std::vector<unsigned char> in(1 << 20), out(1 << 20);
  NiftiFloatScan scan;
  uint64_t total = 0;
  bool in_member = false;  // inside a gzip member that has not ended yet
  bool done = false;       // bytes after the last whole member: not read further
  while (!done) {
    const size_t got = std::fread(in.data(), 1, in.size(), f.get());
    if (got == 0) break;
    if (!gz) {
      if (nifti) scan.feed(in.data(), got);
      total += got;
      continue;
    }
    z.next_in = in.data();
    z.avail_in = unsigned(got);
    while (z.avail_in > 0) {
      if (!in_member) {
        // Another member starts only with gzip's magic bytes; anything else ends the
        // stream (gzread ignores such trailing bytes).
        if (z.next_in[0] != 0x1f) {
          done = true;
          break;
        }
        in_member = true;
      }
      z.next_out = out.data();
      z.avail_out = unsigned(out.size());
      const int rc = inflate(&z, Z_NO_FLUSH);
      const size_t produced = out.size() - z.avail_out;
      if (nifti) scan.feed(out.data(), produced);
      total += produced;
      if (rc == Z_STREAM_END) {
        in_member = false;
        inflateReset(&z);
      } else if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT) {
        throw IoError(path + ": corrupt gzip stream (" + (z.msg ? z.msg : "data error") + " after " +
                      std::to_string(total) + " bytes)");
      } else if (rc == Z_MEM_ERROR) {
        throw std::bad_alloc();
      }
    }
  }
  if (std::ferror(f.get())) throw IoError(path + ": read error");
  if (gz && (in_member || total == 0)) {
    throw IoError(path + ": truncated: the gzip stream ends before its end-of-stream marker (" +
                  std::to_string(total) + " bytes decompressed); the file was cut short");
  }
  if (total < min_bytes) {
    throw IoError(path + ": truncated: " + std::to_string(total) + " bytes" + (gz ? " decompressed" : "") +
                  ", the header needs " + std::to_string(min_bytes));
  }
  if (scan.non_finite() > 0) {
    throw IoError(path + ": contains " + std::to_string(scan.non_finite()) +
                  " non-finite voxel values (NaN or infinity)");
  }
}

}  // namespace autoreg::io::detail
