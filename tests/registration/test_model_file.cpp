// Model files: an exact round trip, and clear errors for files that are not models,
// are cut short, corrupt or of an unknown format version.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "autoreg/registration/archive.h"
#include "autoreg/registration/model_file.h"

namespace autoreg::registration {
namespace {

namespace fs = std::filesystem;

class ModelFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("autoreg-model-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& n) const { return (dir_ / n).string(); }
  std::string read(const std::string& p) const {
    std::ifstream in(p, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  void write(const std::string& p, const std::string& bytes) const {
    std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
  }
  // The message of load_model's ModelFileError (or a failure).
  std::string error_of(const std::string& p) const {
    try {
      load_model(p);
    } catch (const ModelFileError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(p, 0), 0u) << "the message names the file: " << e.what();
      return e.what();
    }
    ADD_FAILURE() << p << " loaded";
    return "";
  }
  Model saved_model(const std::string& p) const {
    ModelInfo info;
    info.network.genotype.edges[4] = "sep_conv_3x3";
    info.network.genotype.edges[10] = "dil_conv_5x5";
    info.grid = {16, 20, 24};
    info.spacing = {2.0, 1.5, 2.5};
    info.normalization = {1.0, 99.0};
    info.notes["data"] = "synthetic\nsubjects";
    at::manual_seed(3);
    Model m = make_model(info);
    save_model(p, m);
    return m;
  }
  fs::path dir_;
};

TEST_F(ModelFile, RoundTripIsExact) {
  for (const char* kind : {"autoreg", "unet"}) {
    const std::string p = path(std::string(kind) + ".autoreg");
    ModelInfo info;
    info.network.kind = kind;
    info.grid = {16, 32, 16};
    at::manual_seed(5);
    Model a = make_model(info);
    save_model(p, a);
    Model b = load_model(p);
    EXPECT_EQ(b.info.network.kind, kind);
    const auto pa = a.network->named_parameters(), pb = b.network->named_parameters();
    ASSERT_EQ(pa.size(), pb.size());
    for (const auto& item : pa) EXPECT_TRUE(at::equal(item.value(), pb[item.key()])) << item.key();
    const at::Tensor x = at::rand({1, 1, 16, 32, 16}), y = at::rand({1, 1, 16, 32, 16});
    EXPECT_TRUE(at::equal(a.network->forward(x, y), b.network->forward(x, y)));
  }
}

TEST_F(ModelFile, DescribesItself) {
  const std::string p = path("m.autoreg");
  const Model a = saved_model(p);
  const Model b = load_model(p);
  EXPECT_EQ(b.info.network.genotype, a.info.network.genotype);
  EXPECT_EQ(b.info.grid, a.info.grid);
  EXPECT_EQ(b.info.spacing, a.info.spacing);
  EXPECT_EQ(b.info.normalization, a.info.normalization);
  EXPECT_EQ(b.info.notes.at("data"), "synthetic subjects");
  // Readable with `head`: the header states what the file is.
  const std::string bytes = read(p);
  EXPECT_EQ(bytes.rfind("AUTOREG MODEL\nformat 2\nnetwork autoreg\n", 0), 0u);
  EXPECT_NE(bytes.find("genotype conv_3x3 conv_3x3 conv_3x3 conv_3x3 sep_conv_3x3"), std::string::npos);
  EXPECT_NE(bytes.find("grid 16 20 24\n"), std::string::npos);
}

TEST_F(ModelFile, UnknownFormatVersion) {
  const std::string p = path("m.autoreg");
  saved_model(p);
  std::string bytes = read(p);
  bytes.replace(bytes.find("format 2"), 8, "format 7");
  write(p, bytes);
  const std::string e = error_of(p);
  EXPECT_NE(e.find("format version 7"), std::string::npos) << e;
  EXPECT_NE(e.find("newer autoreg"), std::string::npos) << e;
}

TEST_F(ModelFile, TruncatedFile) {
  const std::string p = path("m.autoreg");
  saved_model(p);
  const std::string bytes = read(p);
  for (size_t keep : {bytes.size() - 1, bytes.size() / 2, size_t(40)}) {
    write(p, bytes.substr(0, keep));
    const std::string e = error_of(p);
    EXPECT_NE(e.find("truncated"), std::string::npos) << keep << ": " << e;
  }
}

TEST_F(ModelFile, NotAModel) {
  const std::string text = path("notes.txt"), empty = path("empty.autoreg");
  write(text, "hello\nworld\n");
  write(empty, "");
  for (const auto& p : {text, empty}) {
    const std::string e = error_of(p);
    EXPECT_NE(e.find("not an autoreg model file"), std::string::npos) << e;
  }
  const std::string missing = error_of(path("missing.autoreg"));
  EXPECT_NE(missing.find("cannot open"), std::string::npos) << missing;
  // A checkpoint is named as one.
  const std::string ckpt = path("c.autoreg");
  write_archive(ckpt, "CHECKPOINT", Archive{});
  EXPECT_NE(error_of(ckpt).find("CHECKPOINT file, not a MODEL file"), std::string::npos);
}

TEST_F(ModelFile, CorruptWeightsOrHeader) {
  const std::string p = path("m.autoreg");
  saved_model(p);
  const std::string bytes = read(p);
  std::string flipped = bytes;
  flipped[bytes.size() - 100] ^= 0x40;
  write(p, flipped);
  EXPECT_NE(error_of(p).find("checksum"), std::string::npos);
  // The checksum covers the header: a grid that still parses but is not the trained one.
  std::string grid = bytes;
  grid.replace(grid.find("grid 16 20 24"), 13, "grid 16 20 28");
  write(p, grid);
  EXPECT_NE(error_of(p).find("checksum"), std::string::npos);
  // A corrupt size is refused before anything is allocated.
  std::string huge = bytes;
  const size_t dims = huge.find(" float32 5 ");  // a convolution's weights: the first size follows
  ASSERT_NE(dims, std::string::npos);
  huge.insert(dims + 11, "9999999999999");
  write(p, huge);
  EXPECT_NE(error_of(p).find("too large"), std::string::npos) << error_of(p);
  // A well-formed file whose field is not what it should be is named by field.
  write(path("ok.autoreg"), bytes);
  Archive a = model_archive(load_model(path("ok.autoreg")));
  for (auto& [key, value] : a.fields) {
    if (key == "grid") value = "16 20 2x";
  }
  write_archive(p, "MODEL", a);
  EXPECT_NE(error_of(p).find("'grid'"), std::string::npos) << error_of(p);
  // An orientation that names an axis twice.
  a = model_archive(load_model(path("ok.autoreg")));
  a.fields.emplace_back("orientation", "LLS");
  write_archive(p, "MODEL", a);
  EXPECT_NE(error_of(p).find("malformed orientation 'LLS'"), std::string::npos) << error_of(p);
}

// The frame's axes travel with the model; a model without them (written before) reads
// with none.
TEST_F(ModelFile, KeepsItsFramesOrientation) {
  const std::string p = path("m.autoreg");
  const Model a = saved_model(p);
  EXPECT_EQ(load_model(p).info.orientation, "");
  EXPECT_EQ(read(p).find("orientation"), std::string::npos);
  Model b = a;
  b.info.orientation = "ASL";
  save_model(p, b);
  EXPECT_EQ(load_model(p).info.orientation, "ASL");
  EXPECT_NE(read(p).find("\norientation ASL\n"), std::string::npos);
}

// Format 1 (checksum of the data alone; the default model as first committed) is read.
TEST_F(ModelFile, ReadsFormatOne) {
  const std::string p = path("m.autoreg");
  const Model m = saved_model(p);
  std::string bytes = read(p);
  const size_t data = bytes.find("\n", bytes.find("\ndata ") + 1) + 1;
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = data; i < bytes.size(); ++i) {
    h ^= uint8_t(bytes[i]);
    h *= 1099511628211ULL;
  }
  char hex[32];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  const size_t c = bytes.find("\nchecksum ") + 10;
  bytes.replace(c, 16, hex);
  bytes.replace(bytes.find("format 2"), 8, "format 1");
  write(p, bytes);
  const Model back = load_model(p);
  const auto pa = m.network->named_parameters(), pb = back.network->named_parameters();
  for (const auto& item : pa) EXPECT_TRUE(at::equal(item.value(), pb[item.key()])) << item.key();
}

}  // namespace
}  // namespace autoreg::registration
