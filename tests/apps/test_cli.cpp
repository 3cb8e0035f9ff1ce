// The `autoreg` command line, run as a user runs it: outputs, exit codes, messages.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

#include "autoreg/io/field.h"
#include "autoreg/io/volume.h"
#include "autoreg/ops.h"

namespace autoreg::test {
namespace {

namespace fs = std::filesystem;

struct Result {
  int code;
  std::string output;  // stdout and stderr
};

Result run(const std::string& args) {
  const std::string cmd = std::string(AUTOREG_BIN) + " " + args + " 2>&1";
  Result r{-1, ""};
  FILE* pipe = ::popen(cmd.c_str(), "r");
  std::array<char, 512> buf{};
  while (pipe && std::fgets(buf.data(), buf.size(), pipe)) r.output += buf.data();
  const int status = pipe ? ::pclose(pipe) : -1;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("autoreg-cli-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    grid_.size = {12, 10, 8};
    grid_.spacing = {1.2, 0.9, 2.0};
    grid_.origin = {-5, 3, 1};
    grid_.direction = {0, -1, 0, 1, 0, 0, 0, 0, 1};  // rotated 90° about z
    at::manual_seed(7);
    moving_ = at::rand({1, 1, 8, 10, 12});
    const at::Tensor coarse = (at::rand({1, 3, 3, 3, 3}, at::kDouble) * 2 - 1) * 2;
    field_ = at::upsample_trilinear3d(coarse, {8, 10, 12}, true).to(at::kFloat);
    io::write_volume(path("moving.nii.gz"), {moving_, grid_});
    io::write_volume(path("labels.nii.gz"), {(moving_ * 5).floor().to(at::kInt) * 10, grid_});
    io::write_displacement_field(path("field.nii.gz"), field_, grid_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& n) const { return (dir_ / n).string(); }
  fs::path dir_;
  io::Geometry grid_;
  at::Tensor moving_, field_;
};

TEST_F(Cli, ApplyWarpsLikeTheOperator) {
  const Result r = run("apply --field " + path("field.nii.gz") + " --moving " + path("moving.nii.gz") +
                       " --reference " + path("moving.nii.gz") + " --out " + path("warped.nii.gz"));
  ASSERT_EQ(r.code, 0) << r.output;
  const io::Volume out = io::read_volume(path("warped.nii.gz"));
  // The field went through physical millimetres in float32 and back.
  const at::Tensor want = ops::warp(moving_, field_);
  EXPECT_LT((out.data - want).abs().max().item<double>(), 1e-4);
}

TEST_F(Cli, ApplyNearestKeepsLabels) {
  const Result r = run("apply --interpolation nearest --field " + path("field.nii.gz") + " --moving " +
                       path("labels.nii.gz") + " --reference " + path("moving.nii.gz") + " --out " +
                       path("wl.nii.gz"));
  ASSERT_EQ(r.code, 0) << r.output;
  const at::Tensor out = io::read_volume(path("wl.nii.gz"), io::PixelKind::Labels).data;
  EXPECT_EQ(at::remainder(out, 10).abs().max().item<int>(), 0);
}

TEST_F(Cli, ExitCodesAndMessages) {
  EXPECT_EQ(run("").code, 1);
  EXPECT_EQ(run("frobnicate").code, 1);
  EXPECT_EQ(run("apply --help").code, 0);
  const std::string common = " --field " + path("field.nii.gz") + " --reference " + path("moving.nii.gz");
  // An unknown option value, an unknown option, a missing required option: usage errors.
  EXPECT_EQ(run("apply --interpolation cubic --moving " + path("moving.nii.gz") + common + " --out " + path("o.nii")).code, 1);
  EXPECT_EQ(run("apply --bogus 1 --moving " + path("moving.nii.gz") + common + " --out " + path("o.nii")).code, 1);
  // Output equal to an input.
  Result r = run("apply --moving " + path("moving.nii.gz") + common + " --out " + path("moving.nii.gz"));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.output.find("also an input"), std::string::npos) << r.output;
  // A missing input names the file; nothing is written.
  r = run("apply --moving " + path("nope.nii.gz") + common + " --out " + path("o.nii"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find(path("nope.nii.gz")), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(path("o.nii")));
  // A missing output folder.
  r = run("apply --moving " + path("moving.nii.gz") + common + " --out " + path("no/dir/o.nii"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("output folder"), std::string::npos) << r.output;
  // A reference on another grid than the field.
  io::Geometry other = grid_;
  other.spacing[0] = 3.0;
  io::write_volume(path("other.nii.gz"), {moving_, other});
  r = run("apply --moving " + path("moving.nii.gz") + " --field " + path("field.nii.gz") +
          " --reference " + path("other.nii.gz") + " --out " + path("o.nii"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.output.find("grid"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace autoreg::test

namespace autoreg::test {
namespace {

TEST_F(Cli, EvaluateReportsDiceHd95AndFolding) {
  // Fixed: a box of label 5; warped: the same box shifted by one voxel along i (1.2 mm).
  at::Tensor fixed = at::zeros({1, 1, 8, 10, 12}, at::kInt);
  fixed.slice(2, 2, 6).slice(3, 2, 8).slice(4, 2, 8).fill_(5);
  const at::Tensor warped = at::roll(fixed, {1}, {4});
  io::write_volume(path("fl.nii.gz"), {fixed, grid_});
  io::write_volume(path("wl2.nii.gz"), {warped, grid_});
  const Result r = run("evaluate --json --fixed-labels " + path("fl.nii.gz") + " --warped-labels " +
                       path("wl2.nii.gz") + " --field " + path("field.nii.gz"));
  ASSERT_EQ(r.code, 0) << r.output;
  // 4×6×6 boxes overlapping in 4×6×5 voxels: Dice 5/6.
  EXPECT_NE(r.output.find("\"dice\": 0.8333"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"hd95_mm\": 1.2"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("non_positive_jacobian_percent"), std::string::npos) << r.output;
  EXPECT_EQ(run("evaluate --json --csv --fixed-labels " + path("fl.nii.gz") + " --warped-labels " +
                path("wl2.nii.gz")).code, 1);
  EXPECT_EQ(run("evaluate --labels 5,x --fixed-labels " + path("fl.nii.gz") + " --warped-labels " +
                path("wl2.nii.gz")).code, 1);
}

}  // namespace
}  // namespace autoreg::test

namespace autoreg::test {
namespace {

TEST_F(Cli, RegisterAlignsASyntheticPair) {
  // Fixed: smooth blobs; moving: the same pulled through a known smooth deformation.
  at::manual_seed(9);
  const at::Tensor fixed = at::upsample_trilinear3d(at::rand({1, 1, 4, 4, 4}), {16, 20, 24}, true);
  const at::Tensor v = at::upsample_trilinear3d((at::rand({1, 3, 3, 3, 3}) * 2 - 1) * 1.5, {16, 20, 24}, true);
  const at::Tensor moving = ops::warp(fixed, ops::integrate(-v, 7), ops::Interpolation::Linear,
                                      ops::Padding::Border);
  io::Geometry g;
  g.size = {24, 20, 16};
  io::write_volume(path("f.nii.gz"), {fixed, g});
  io::write_volume(path("m.nii.gz"), {moving, g});
  io::write_volume(path("ml.nii.gz"), {(moving * 4).floor().to(at::kInt), g});
  const Result r = run("register --json --similarity mse --regularization 0.05 --iterations 40,40 --fixed " +
                       path("f.nii.gz") + " --moving " + path("m.nii.gz") + " --out-warped " +
                       path("w.nii.gz") + " --out-field " + path("d.nii.gz") + " --moving-labels " +
                       path("ml.nii.gz") + " --out-labels " + path("wl.nii.gz"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("non_positive_jacobian_percent"), std::string::npos) << r.output;
  const at::Tensor warped = io::read_volume(path("w.nii.gz")).data;
  // Away from the faces, where the output reads zero outside the moving volume.
  const auto inner = [](const at::Tensor& t) { return t.narrow(2, 3, 10).narrow(3, 3, 14).narrow(4, 3, 18); };
  const double before = inner(fixed - moving).pow(2).mean().item<double>();
  const double after = inner(fixed - warped).pow(2).mean().item<double>();
  EXPECT_LT(after, 0.5 * before);
  EXPECT_TRUE(fs::exists(path("d.nii.gz")));
  EXPECT_TRUE(fs::exists(path("wl.nii.gz")));
  // Options that go together, and outputs that are inputs.
  EXPECT_EQ(run("register --fixed " + path("f.nii.gz") + " --moving " + path("m.nii.gz") +
                " --out-warped " + path("w2.nii.gz") + " --out-field " + path("d2.nii.gz") +
                " --moving-labels " + path("ml.nii.gz")).code, 1);
  EXPECT_EQ(run("register --fixed " + path("f.nii.gz") + " --moving " + path("m.nii.gz") +
                " --out-warped " + path("m.nii.gz") + " --out-field " + path("d2.nii.gz")).code, 1);
  EXPECT_EQ(run("register --similarity mind --fixed " + path("f.nii.gz") + " --moving " + path("m.nii.gz") +
                " --out-warped " + path("w2.nii.gz") + " --out-field " + path("d2.nii.gz")).code, 1);
}

}  // namespace
}  // namespace autoreg::test
