// Fast gzip: whole-buffer DEFLATE (libdeflate) on fixed-size blocks, in parallel, each
// block its own gzip member. A file of concatenated members is a valid gzip file
// (RFC 1952 §2.2): zlib's gzread (ITK, FSL, AFNI through znzlib), Python's gzip
// (nibabel) and gzip -d read it whole.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

struct libdeflate_compressor;

namespace autoreg::io::detail {

class OutputFile;

// Writes gzip members to an output file: each call to write() compresses up to
// `threads` byte ranges side by side (intra-op threads) and appends them in order.
class ParallelGzip {
 public:
  struct Bytes {
    const char* data;
    size_t size;
  };
  ParallelGzip(OutputFile& out, int level, int threads, size_t max_block);
  ~ParallelGzip();
  int threads() const { return int(compressors_.size()); }
  // At most threads() ranges of at most max_block bytes each; an empty range is an
  // empty member. With `store`, the members hold the bytes as they are (DEFLATE's stored
  // blocks: no compression, any gzip reader reads them). Returns the bytes written.
  size_t write(const std::vector<Bytes>& blocks, bool store = false);
  // The size level-`level` DEFLATE gives `bytes` (at most max_block), relative to it;
  // nothing is written.
  double ratio(Bytes bytes);

 private:
  OutputFile& out_;
  std::vector<libdeflate_compressor*> compressors_;
  std::vector<std::vector<char>> packed_;
};

// Compresses `source` into `target` (created or truncated) at `level` (libdeflate's 1–12;
// 1 is fastest) on `threads` threads, in blocks of `block_bytes`. Throws IoError naming
// the file that cannot be read or written.
void gzip_file(const std::string& source, const std::string& target, int level, int threads,
               int64_t block_bytes = int64_t(8) << 20);

}  // namespace autoreg::io::detail

namespace autoreg::io::detail {

// Reads the input file `path` to its end without keeping its bytes: a .gz file through
// zlib (every member must be whole: zlib checks each member's CRC-32 and length), any
// other file as it is; together they must hold at least `min_bytes`. zlib's gzread (and so
// ITK's NIfTI reader) returns a short read on a file cut short without an error; this is
// the check it lacks. Zero padding or other bytes after the last whole gzip member are
// ignored, as gzread and gzip -d ignore them. For NIfTI-1 (.nii, .nii.gz), float32 and
// float64 voxels must be finite: ITK's NIfTI library reads NaN and infinity as 0 without a
// word. Throws IoError naming the file: "truncated", "corrupt", "non-finite".
void check_input_stream(const std::string& path, uint64_t min_bytes);

}  // namespace autoreg::io::detail
