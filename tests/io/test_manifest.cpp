// Dataset manifests: columns in any order, paths relative to the manifest, splits, and
// errors that name the file and line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "autoreg/io/manifest.h"
#include "autoreg/io/volume.h"

namespace autoreg::io {
namespace {

namespace fs = std::filesystem;

class ManifestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("autoreg-manifest-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_ / "data");
    for (const char* f : {"a.nii.gz", "a_seg.nii.gz", "b.nii.gz", "c_seg.nii.gz", "atlas.nii.gz"}) {
      std::ofstream(dir_ / "data" / f) << "x";
    }
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string manifest(const std::string& text) const {
    const std::string p = (dir_ / "m.csv").string();
    std::ofstream(p) << text;
    return p;
  }
  std::string error_of(const std::string& text) const {
    try {
      read_manifest(manifest(text));
    } catch (const IoError& e) {
      return e.what();
    }
    ADD_FAILURE() << "accepted:\n" << text;
    return "";
  }
  fs::path dir_;
};

TEST_F(ManifestTest, RowsSplitsAndRelativePaths) {
  const Manifest m = read_manifest(manifest(
      "split,image,labels\n"
      "# a comment\n"
      "train,data/a.nii.gz,data/a_seg.nii.gz\n"
      "\n"
      ",data/b.nii.gz,\n"
      "val,,\"data/c_seg.nii.gz\"\n"
      "atlas," + (dir_ / "data/atlas.nii.gz").string() + ",\n"));
  ASSERT_EQ(m.rows.size(), 4u);
  EXPECT_EQ(m.rows[0].image, (dir_ / "data/a.nii.gz").string());
  EXPECT_EQ(m.rows[0].labels, (dir_ / "data/a_seg.nii.gz").string());
  EXPECT_EQ(m.rows[0].line, 3);
  EXPECT_EQ(m.rows[1].split, "train");  // the default
  EXPECT_EQ(m.rows[1].labels, "");
  EXPECT_EQ(m.rows[2].image, "");
  EXPECT_EQ(m.split("val").size(), 1u);
  EXPECT_EQ(m.split("atlas").front().image, (dir_ / "data/atlas.nii.gz").string());
  EXPECT_EQ(m.split("train").size(), 2u);
}

TEST_F(ManifestTest, ImageColumnAlone) {
  const Manifest m = read_manifest(manifest("image\ndata/a.nii.gz\ndata/b.nii.gz\n"));
  EXPECT_EQ(m.rows.size(), 2u);
}

TEST_F(ManifestTest, ErrorsNameFileAndLine) {
  const std::string p = (dir_ / "m.csv").string();
  std::string e = error_of("labels,split\ndata/a_seg.nii.gz,train\n");
  EXPECT_NE(e.find(p + ":1: the header line needs the 'image' column"), std::string::npos) << e;
  e = error_of("image,labels\ndata/a.nii.gz\n");
  EXPECT_NE(e.find(p + ":2: 1 fields, the header has 2"), std::string::npos) << e;
  e = error_of("image,split\ndata/a.nii.gz,testing\n");
  EXPECT_NE(e.find(":2: unknown split 'testing'"), std::string::npos) << e;
  e = error_of("image\ndata/a.nii.gz\ndata/missing.nii.gz\n");
  EXPECT_NE(e.find(":3: " + (dir_ / "data/missing.nii.gz").string() + ": no such file"), std::string::npos) << e;
  e = error_of("image,split\ndata/a.nii.gz,atlas\ndata/b.nii.gz,atlas\n");
  EXPECT_NE(e.find(":3: a second atlas row"), std::string::npos) << e;
  e = error_of("image,labels\n,\n");
  EXPECT_NE(e.find(":2: a row needs an image or a label map"), std::string::npos) << e;
  e = error_of("image,color\n");
  EXPECT_NE(e.find("unknown column 'color'"), std::string::npos) << e;
  e = error_of("image\n");
  EXPECT_NE(e.find("lists no subjects"), std::string::npos) << e;
  EXPECT_THROW(read_manifest((dir_ / "none.csv").string()), IoError);
}

}  // namespace
}  // namespace autoreg::io
