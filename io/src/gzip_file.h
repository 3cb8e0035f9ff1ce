// Fast gzip of a file: whole-buffer DEFLATE (libdeflate) on fixed-size blocks, in
// parallel, each block its own gzip member. A file of concatenated members is a valid
// gzip file (RFC 1952 §2.2): zlib's gzread (ITK, FSL, AFNI through znzlib), Python's gzip
// (nibabel) and gzip -d read it whole.
#pragma once

#include <cstdint>
#include <string>

namespace autoreg::io::detail {

// Compresses `source` into `target` (created or truncated) at `level` (libdeflate's 1–12;
// 1 is fastest) on `threads` threads, in blocks of `block_bytes`. Throws IoError naming
// the file that cannot be read or written.
void gzip_file(const std::string& source, const std::string& target, int level, int threads,
               int64_t block_bytes = int64_t(8) << 20);

}  // namespace autoreg::io::detail
