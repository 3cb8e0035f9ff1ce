#include "gzip_file.h"

#include <ATen/Parallel.h>
#include <libdeflate.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include "autoreg/io/volume.h"

namespace autoreg::io::detail {
namespace {

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw IoError(path + ": " + what + (errno ? std::string(" (") + std::strerror(errno) + ")" : ""));
}

}  // namespace

ParallelGzip::ParallelGzip(std::FILE* out, std::string target, int level, int threads, size_t max_block)
    : out_(out), target_(std::move(target)) {
  for (int t = 0; t < std::max(1, threads); ++t) {
    compressors_.push_back(libdeflate_alloc_compressor(std::clamp(level, 1, 12)));
    if (!compressors_.back()) {
      compressors_.pop_back();
      for (auto* c : compressors_) libdeflate_free_compressor(c);
      throw std::bad_alloc();
    }
  }
  packed_.assign(compressors_.size(), std::vector<char>(libdeflate_gzip_compress_bound(compressors_[0], max_block)));
}

ParallelGzip::~ParallelGzip() {
  for (auto* c : compressors_) libdeflate_free_compressor(c);
  compressors_.clear();
}

void ParallelGzip::write(const std::vector<Bytes>& blocks) {
  const int64_t count = int64_t(blocks.size());
  if (count > threads()) throw std::logic_error("ParallelGzip::write: more blocks than threads");
  std::vector<size_t> packed_size(blocks.size());
  at::parallel_for(0, count, 1, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      packed_size[b] = libdeflate_gzip_compress(compressors_[b], blocks[b].data, blocks[b].size,
                                                packed_[b].data(), packed_[b].size());
    }
  });
  errno = 0;
  for (int64_t b = 0; b < count; ++b) {
    // 0 cannot happen within the bound (a larger block than max_block would be a bug).
    if (packed_size[b] == 0) throw IoError(target_ + ": compression failed");
    if (std::fwrite(packed_[b].data(), 1, packed_size[b], out_) != packed_size[b]) fail(target_, "cannot write");
  }
}

void gzip_file(const std::string& source, const std::string& target, int level, int threads, int64_t block_bytes) {
  threads = std::max(1, threads);
  errno = 0;
  std::unique_ptr<std::FILE, FileCloser> in(std::fopen(source.c_str(), "rb"));
  if (!in) fail(source, "cannot open to compress");
  std::unique_ptr<std::FILE, FileCloser> out(std::fopen(target.c_str(), "wb"));
  if (!out) fail(target, "cannot create");
  const size_t block = size_t(std::max<int64_t>(block_bytes, 1 << 16));
  ParallelGzip gzip(out.get(), target, level, threads, block);
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
  errno = 0;
  if (std::fflush(out.get()) != 0) fail(target, "cannot write");
  if (std::fclose(out.release()) != 0) fail(target, "cannot write");
}

}  // namespace autoreg::io::detail
