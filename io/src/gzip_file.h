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
