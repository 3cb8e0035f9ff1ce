// Training set files (`autoreg pack`): an exact round trip of every subject, split and
// the model description; refusals of label values int16 cannot hold and of files that
// are not training sets or whose volumes are off their grid.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <filesystem>

#include "autoreg/registration/archive.h"
#include "autoreg/registration/training_set_file.h"

namespace autoreg::registration {
namespace {

namespace fs = std::filesystem;

class TrainingSetFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (fs::temp_directory_path() / ("autoreg-set-" + std::to_string(::getpid()) + "-" +
                                          ::testing::UnitTest::GetInstance()->current_test_info()->name()))
                .string();
  }
  void TearDown() override { fs::remove(path_); }
  static Subject subject(const std::string& name, int seed, bool labels = true) {
    at::manual_seed(seed);
    Subject s{name, at::rand({1, 1, 8, 6, 4}), {}};
    if (labels) s.labels = (at::rand({1, 1, 8, 6, 4}) * 2030).floor().to(at::kInt);  // FreeSurfer's range
    return s;
  }
  std::string path_;
};

TEST_F(TrainingSetFileTest, RoundTripsSubjectsSplitsAndTheModelDescription) {
  TrainingSet set;
  set.train = {subject("a", 1), subject("b", 2, false)};
  set.validation = {subject("c", 3)};
  set.atlas = subject("atlas", 4);
  set.intensity_table = at::rand({5, 3}).to(at::kDouble);
  ModelInfo info;
  info.grid = {8, 6, 4};
  info.spacing = {2, 2.5, 3};
  info.orientation = "ASL";
  write_training_set(path_, set, info);

  const TrainingSetFile back = read_training_set(path_);
  EXPECT_EQ(back.info.grid, info.grid);
  EXPECT_EQ(back.info.spacing, info.spacing);
  EXPECT_EQ(back.info.orientation, "ASL");
  ASSERT_EQ(back.set.train.size(), 2u);
  ASSERT_EQ(back.set.validation.size(), 1u);
  ASSERT_TRUE(back.set.atlas.has_value());
  EXPECT_EQ(back.set.train[0].name, "a");
  EXPECT_EQ(back.set.validation[0].name, "c");
  EXPECT_TRUE(at::equal(back.set.train[0].image, set.train[0].image));
  EXPECT_TRUE(at::equal(back.set.train[0].labels, set.train[0].labels));
  EXPECT_EQ(back.set.train[0].labels.scalar_type(), at::kInt);  // as the trainer takes them
  EXPECT_FALSE(back.set.train[1].labels.defined());
  EXPECT_TRUE(at::equal(back.set.atlas->labels, set.atlas->labels));
  EXPECT_TRUE(at::equal(back.set.intensity_table, set.intensity_table));
}

TEST_F(TrainingSetFileTest, RefusesWhatItCannotHoldOrRead) {
  TrainingSet set;
  set.train = {subject("a", 1)};
  set.train[0].labels[0][0][0][0][0] = 40000;
  ModelInfo info;
  info.grid = {8, 6, 4};
  EXPECT_THROW(write_training_set(path_, set, info), std::invalid_argument);
  EXPECT_FALSE(fs::exists(path_));

  // A model file is not a training set.
  write_archive(path_, "MODEL", info_archive(info));
  EXPECT_THROW(read_training_set(path_), ModelFileError);

  // A volume off the set's grid.
  set.train[0] = subject("a", 1);
  write_training_set(path_, set, info);
  Archive a = read_archive(path_, "TRAINING_SET");
  for (auto& [name, t] : a.tensors) {
    if (name == "subject/0/image") t = at::zeros({1, 1, 8, 6, 5});
  }
  write_archive(path_, "TRAINING_SET", a);
  try {
    read_training_set(path_);
    FAIL();
  } catch (const ModelFileError& e) {
    EXPECT_NE(std::string(e.what()).find("not on the set's grid"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind(path_, 0), 0u);
  }
}

}  // namespace
}  // namespace autoreg::registration
