// The .nii.gz writer's parallel gzip: a file of independently compressed blocks (one gzip
// member each) reads back whole through zlib, whatever the size, block and thread count;
// a volume of several blocks written as .nii.gz reads back exactly through ITK.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "autoreg/io/volume.h"
#include "gzip_file.h"
#include "output_file.h"

namespace autoreg::test {
namespace {

namespace fs = std::filesystem;

class Gzip : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("autoreg-gzip-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

std::string gunzip(const std::string& file) {
  gzFile in = gzopen(file.c_str(), "rb");
  EXPECT_NE(in, nullptr) << file;
  std::string out;
  char buffer[1 << 15];
  int n;
  while ((n = gzread(in, buffer, sizeof buffer)) > 0) out.append(buffer, size_t(n));
  EXPECT_EQ(n, 0) << "gzread error";
  gzclose(in);
  return out;
}

TEST_F(Gzip, ConcatenatedMembersReadBackWhole) {
  constexpr int64_t kBlock = 1 << 16;
  std::mt19937 rng(7);
  for (const int64_t size : {int64_t(0), int64_t(1000), kBlock, 2 * kBlock, 3 * kBlock + kBlock / 2}) {
    // Half noise, half runs: something to compress and something not.
    std::string bytes(size_t(size), '\0');
    for (int64_t i = 0; i < size; ++i) bytes[size_t(i)] = char((i / 4096) % 2 ? rng() : i / 97);
    std::ofstream(path("raw"), std::ios::binary | std::ios::trunc) << bytes;
    for (const int threads : {1, 2, 3}) {
      autoreg::io::detail::gzip_file(path("raw"), path("raw.gz"), 1, threads, kBlock);
      std::ifstream f(path("raw.gz"), std::ios::binary);
      EXPECT_EQ(f.get(), 0x1f);
      EXPECT_EQ(f.get(), 0x8b);
      EXPECT_EQ(gunzip(path("raw.gz")), bytes) << size << " bytes, " << threads << " threads";
    }
  }
  EXPECT_THROW(autoreg::io::detail::gzip_file(path("missing"), path("out.gz"), 1, 2), io::IoError);
}

// Stored members (DEFLATE without compression, for bytes that do not compress) read
// back through zlib: empty, shorter and longer than a stored block (65535 bytes), mixed
// with compressed members in one file.
TEST_F(Gzip, StoredMembersReadBackWhole) {
  std::mt19937 rng(9);
  std::string bytes(200000, '\0');
  for (char& c : bytes) c = char(rng());
  {
    autoreg::io::detail::OutputFile out(path("s.gz"), "s.gz");
    autoreg::io::detail::ParallelGzip gzip(out, 1, 2, 1 << 18);
    EXPECT_EQ(gzip.write({{bytes.data(), 0}}, true), 10u + 5 + 8);
    const size_t stored = gzip.write({{bytes.data(), 65535}, {bytes.data() + 65535, 65536}}, true);
    EXPECT_EQ(stored, 2 * (10u + 8) + 65535 + 5 + 65536 + 2 * 5);
    gzip.write({{bytes.data() + 131071, 100}}, false);
    gzip.write({{bytes.data() + 131171, bytes.size() - 131171}}, true);
    out.close();
  }
  EXPECT_EQ(gunzip(path("s.gz")), bytes);
}

// 12 MB of float32: two 8 MB blocks, compressed on two threads.
TEST_F(Gzip, AVolumeOfSeveralBlocksWritesAndReadsBackExactly) {
  const int threads = at::get_num_threads();
  at::set_num_threads(2);
  at::manual_seed(2);
  io::Volume v{at::randn({1, 1, 48, 256, 256}), {}};
  v.geometry.size = {256, 256, 48};
  v.geometry.spacing = {0.9, 0.9, 3};
  io::write_volume(path("v.nii.gz"), v);
  at::set_num_threads(threads);
  EXPECT_TRUE(at::equal(io::read_volume(path("v.nii.gz")).data, v.data));
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{"v.nii.gz"}) << "no temporary left behind";
}

}  // namespace
}  // namespace autoreg::test
