#include "gzip_file.h"

#include <libdeflate.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "autoreg/io/volume.h"

namespace autoreg::io::detail {
namespace {

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
struct CompressorFree {
  void operator()(libdeflate_compressor* c) const { libdeflate_free_compressor(c); }
};

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw IoError(path + ": " + what + (errno ? std::string(" (") + std::strerror(errno) + ")" : ""));
}

}  // namespace

void gzip_file(const std::string& source, const std::string& target, int level, int threads, int64_t block_bytes) {
  threads = std::max(1, threads);
  errno = 0;
  std::unique_ptr<std::FILE, FileCloser> in(std::fopen(source.c_str(), "rb"));
  if (!in) fail(source, "cannot open to compress");
  std::unique_ptr<std::FILE, FileCloser> out(std::fopen(target.c_str(), "wb"));
  if (!out) fail(target, "cannot create");
  std::vector<std::unique_ptr<libdeflate_compressor, CompressorFree>> compressors;
  for (int t = 0; t < threads; ++t) {
    compressors.emplace_back(libdeflate_alloc_compressor(std::clamp(level, 1, 12)));
    if (!compressors.back()) throw std::bad_alloc();
  }
  const size_t block = size_t(std::max<int64_t>(block_bytes, 1 << 16));
  const size_t bound = libdeflate_gzip_compress_bound(compressors[0].get(), block);
  std::vector<std::vector<char>> raw(threads, std::vector<char>(block)), packed(threads, std::vector<char>(bound));
  std::vector<size_t> raw_size(threads), packed_size(threads);
  bool empty_file = true;
  while (true) {
    // One round: up to `threads` blocks read, compressed side by side, written in order.
    int blocks = 0;
    for (; blocks < threads; ++blocks) {
      raw_size[blocks] = std::fread(raw[blocks].data(), 1, block, in.get());
      if (raw_size[blocks] == 0) break;
      if (raw_size[blocks] < block) {
        ++blocks;
        break;
      }
    }
    if (std::ferror(in.get())) fail(source, "cannot read to compress");
    if (blocks == 0 && !empty_file) break;
    const int count = std::max(blocks, 1);  // an empty file still gets one (empty) member
    const auto compress = [&](int b) {
      packed_size[b] = libdeflate_gzip_compress(compressors[b].get(), raw[b].data(), raw_size[b], packed[b].data(),
                                                packed[b].size());
    };
    std::vector<std::thread> workers;
    for (int b = 1; b < count; ++b) workers.emplace_back(compress, b);
    compress(0);
    for (auto& w : workers) w.join();
    for (int b = 0; b < count; ++b) {
      if (packed_size[b] == 0) throw IoError(target + ": compression failed");  // cannot happen within the bound
      if (std::fwrite(packed[b].data(), 1, packed_size[b], out.get()) != packed_size[b]) fail(target, "cannot write");
    }
    empty_file = false;
    if (blocks < threads || raw_size[blocks - 1] < block) break;
  }
  if (std::fflush(out.get()) != 0) fail(target, "cannot write");
  if (std::fclose(out.release()) != 0) fail(target, "cannot write");
}

}  // namespace autoreg::io::detail
