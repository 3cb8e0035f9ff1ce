#include "gzip_file.h"

#include <ATen/Parallel.h>
#include <libdeflate.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include "autoreg/io/volume.h"
#include "output_file.h"

namespace autoreg::io::detail {
namespace {

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw IoError(path + ": " + what + (errno ? std::string(" (") + std::strerror(errno) + ")" : ""));
}

// A gzip member of stored DEFLATE blocks (RFC 1951 §3.2.4): at most 65535 bytes each.
size_t stored_size(size_t n) { return 10 + 5 * std::max<size_t>(1, (n + 65534) / 65535) + n + 8; }

size_t store(const char* data, size_t n, char* out) {
  static const unsigned char header[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff};
  char* o = out;
  std::memcpy(o, header, sizeof header);
  o += sizeof header;
  size_t done = 0;
  do {
    const size_t len = std::min<size_t>(65535, n - done);
    const bool final = done + len == n;
    *o++ = char(final ? 1 : 0);  // BFINAL, BTYPE 00
    const uint16_t l = uint16_t(len), nl = uint16_t(~l);
    std::memcpy(o, &l, 2);  // little-endian (the NIfTI writer asserts the host is)
    std::memcpy(o + 2, &nl, 2);
    o += 4;
    std::memcpy(o, data + done, len);
    o += len;
    done += len;
  } while (done < n);
  const uint32_t crc = libdeflate_crc32(0, data, n), size = uint32_t(n);
  std::memcpy(o, &crc, 4);
  std::memcpy(o + 4, &size, 4);
  return size_t(o + 8 - out);
}

}  // namespace

ParallelGzip::ParallelGzip(OutputFile& out, int level, int threads, size_t max_block) : out_(out) {
  for (int t = 0; t < std::max(1, threads); ++t) {
    compressors_.push_back(libdeflate_alloc_compressor(std::clamp(level, 1, 12)));
    if (!compressors_.back()) {
      compressors_.pop_back();
      for (auto* c : compressors_) libdeflate_free_compressor(c);
      throw std::bad_alloc();
    }
  }
  const size_t bound = std::max(libdeflate_gzip_compress_bound(compressors_[0], max_block), stored_size(max_block));
  packed_.assign(compressors_.size(), std::vector<char>(bound));
}

ParallelGzip::~ParallelGzip() {
  for (auto* c : compressors_) libdeflate_free_compressor(c);
  compressors_.clear();
}

size_t ParallelGzip::write(const std::vector<Bytes>& blocks, bool stored) {
  const int64_t count = int64_t(blocks.size());
  if (count > threads()) throw std::logic_error("ParallelGzip::write: more blocks than threads");
  std::vector<size_t> packed_size(blocks.size());
  at::parallel_for(0, count, 1, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      packed_size[b] = stored ? store(blocks[b].data, blocks[b].size, packed_[b].data())
                              : libdeflate_gzip_compress(compressors_[b], blocks[b].data, blocks[b].size,
                                                         packed_[b].data(), packed_[b].size());
    }
  });
  for (int64_t b = 0; b < count; ++b) {
    // 0 cannot happen within the bound (a larger block than max_block would be a bug).
    if (packed_size[b] == 0) throw std::logic_error("ParallelGzip::write: a block larger than max_block");
    out_.write(packed_[b].data(), packed_size[b]);
  }
  size_t total = 0;
  for (size_t n : packed_size) total += n;
  return total;
}

double ParallelGzip::ratio(Bytes bytes) {
  if (bytes.size == 0) return 1.0;
  const size_t n = libdeflate_gzip_compress(compressors_[0], bytes.data, bytes.size, packed_[0].data(), packed_[0].size());
  if (n == 0) throw std::logic_error("ParallelGzip::ratio: a block larger than max_block");
  return double(n) / double(bytes.size);
}

void gzip_file(const std::string& source, const std::string& target, int level, int threads, int64_t block_bytes) {
  threads = std::max(1, threads);
  errno = 0;
  std::unique_ptr<std::FILE, FileCloser> in(std::fopen(source.c_str(), "rb"));
  if (!in) fail(source, "cannot open to compress");
  OutputFile out(target, target);
  const size_t block = size_t(std::max<int64_t>(block_bytes, 1 << 16));
  ParallelGzip gzip(out, level, threads, block);
  std::vector<std::vector<char>> raw(threads, std::vector<char>(block));
  bool empty_file = true;
  while (true) {
    // One round: up to `threads` blocks read, compressed side by side, written in order.
    std::vector<ParallelGzip::Bytes> blocks;
    bool last = false;
    for (int b = 0; b < threads && !last; ++b) {
      const size_t n = std::fread(raw[b].data(), 1, block, in.get());
      last = n < block;
      if (n > 0) blocks.push_back({raw[b].data(), n});
    }
    if (std::ferror(in.get())) fail(source, "cannot read to compress");
    if (blocks.empty() && empty_file) blocks.push_back({raw[0].data(), 0});  // an empty file: one empty member
    gzip.write(blocks);
    empty_file = false;
    if (last) break;
  }
  out.close();
}

}  // namespace autoreg::io::detail
