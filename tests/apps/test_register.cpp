// `autoreg register`: deformable and affine results on synthetic pairs, its outputs'
// interoperability with `autoreg apply` and ITK transform files, and its bad inputs.
#include <ATen/Context.h>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "autoreg/io/grid.h"
#include "autoreg/io/transform.h"
#include "autoreg/ops.h"
#include "cli.h"

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
  const Result r = run("register --json --no-affine --similarity mse --regularization 0.05 --iterations 40,40 --fixed " +
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
  EXPECT_EQ(run("register --similarity nmi --fixed " + path("f.nii.gz") + " --moving " + path("m.nii.gz") +
                " --out-warped " + path("w2.nii.gz") + " --out-field " + path("d2.nii.gz")).code, 1);
  EXPECT_EQ(run("register --affine-only --no-affine --fixed " + path("f.nii.gz") + " --moving " +
                path("m.nii.gz") + " --out-warped " + path("w2.nii.gz") + " --out-field " +
                path("d2.nii.gz")).code, 1);
  EXPECT_FALSE(fs::exists(path("w2.nii.gz")));
  // Three levels (1/8, 1/4, 1/2) register as well; seven are refused.
  const std::string pair = " --no-affine --similarity mse --regularization 0.05 --fixed " + path("f.nii.gz") +
                           " --moving " + path("m.nii.gz") + " --out-field " + path("d3.nii.gz") + " --out-warped ";
  ASSERT_EQ(run("register --iterations 20,40,40" + pair + path("w3.nii.gz")).code, 0);
  EXPECT_LT(inner(fixed - io::read_volume(path("w3.nii.gz")).data).pow(2).mean().item<double>(), 0.5 * before);
  const Result seven = run("register --iterations 1,1,1,1,1,1,1" + pair + path("w4.nii.gz"));
  EXPECT_EQ(seven.code, 1);
  EXPECT_NE(seven.output.find("give 1 to 6 counts"), std::string::npos) << seven.output;
  // The sliding regulariser registers as well; an unknown one is a usage error.
  ASSERT_EQ(run("register --regularizer tv --iterations 40,40" + pair + path("w5.nii.gz")).code, 0);
  EXPECT_LT(inner(fixed - io::read_volume(path("w5.nii.gz")).data).pow(2).mean().item<double>(), 0.5 * before);
  EXPECT_EQ(run("register --regularizer elastic" + pair + path("w6.nii.gz")).code, 1);
  // Any one output will do: only the warped image, only the labels, only the summary;
  // none at all is a usage error that lists them.
  const std::string inputs = " --no-affine --similarity mse --iterations 10,10 --fixed " + path("f.nii.gz") +
                             " --moving " + path("m.nii.gz");
  Result only = run("register" + inputs + " --out-warped " + path("only_w.nii.gz"));
  ASSERT_EQ(only.code, 0) << only.output;
  EXPECT_NE(only.output.find("wrote " + path("only_w.nii.gz") + " in "), std::string::npos) << only.output;
  only = run("register" + inputs + " --moving-labels " + path("ml.nii.gz") + " --out-labels " + path("only_l.nii.gz"));
  ASSERT_EQ(only.code, 0) << only.output;
  EXPECT_TRUE(fs::exists(path("only_l.nii.gz")));
  only = run("register --json" + inputs);
  ASSERT_EQ(only.code, 0) << only.output;
  EXPECT_NE(only.output.find("non_positive_jacobian_percent"), std::string::npos) << only.output;
  only = run("register" + inputs);
  EXPECT_EQ(only.code, 1) << only.output;
  EXPECT_NE(only.output.find("nothing to write: give --out-warped FILE"), std::string::npos) << only.output;
  EXPECT_EQ(fs::exists(path("only_w.nii.gz")) + fs::exists(path("only_l.nii.gz")), 2);
}


// A pair whose moving image is the fixed one moved by a known affine, each on its own
// oblique grid: fixed(x) = f(x), moving(y) = f(A⁻¹·y).
class RegisterAffine : public Cli {
 protected:
  void SetUp() override {
    Cli::SetUp();
    truth_ = at::eye(4, at::kDouble);
    const double c = std::cos(0.12), s = std::sin(0.12);
    const double m[3][4] = {{c, -s, 0, 4.0}, {s, c, 0, -3.0}, {0, 0, 1.03, 2.0}};
    for (int r = 0; r < 3; ++r)
      for (int k = 0; k < 4; ++k) truth_[r][k] = m[r][k];
    fixed_grid_.size = {40, 44, 36};
    fixed_grid_.spacing = {2, 2, 2};
    fixed_grid_.origin = {-40, -44, -36};
    // Wide enough that the moved head is nowhere cut off by the field of view.
    moving_grid_.size = {48, 48, 36};
    moving_grid_.spacing = {2.2, 2.1, 2.5};
    moving_grid_.origin = {-50, -54, -45};
    moving_grid_.direction = {0.96, -0.28, 0, 0.28, 0.96, 0, 0, 0, 1};
    write_head(path("f.nii.gz"), fixed_grid_, at::eye(4, at::kDouble));
    write_head(path("m.nii.gz"), moving_grid_, at::inverse(truth_));
  }
  // An asymmetric head-like volume, seen through `to_head` (world → head coordinates).
  static void write_head(const std::string& file, const io::Geometry& g, const at::Tensor& to_head) {
    const at::Tensor p = io::transform_points(to_head, io::physical_points(g).to(at::kDouble));
    auto blob = [&](double x, double y, double z, double rx, double ry, double rz, double power) {
      const at::Tensor q = ((p.select(1, 0) - x) / rx).pow(2) + ((p.select(1, 1) - y) / ry).pow(2) +
                           ((p.select(1, 2) - z) / rz).pow(2);
      return at::exp(-q.pow(power));
    };
    const at::Tensor v = 0.5 * blob(0, 0, 0, 30, 22, 26, 3) + 0.4 * blob(10, 5, 0, 8, 8, 8, 1) +
                         0.3 * blob(-12, -8, 9, 6, 6, 6, 1) + 0.5 * blob(4, 12, -10, 9, 9, 9, 1);
    io::write_volume(file, {v.unsqueeze(1).to(at::kFloat), g});
  }
  at::Tensor truth_;
  io::Geometry fixed_grid_, moving_grid_;
};

TEST_F(RegisterAffine, RecoversTheAffineAndItsFilesAgreeWithApply) {
  const Result r = run("register --affine-only --fixed " + path("f.nii.gz") + " --moving " + path("m.nii.gz") +
                       " --out-warped " + path("w.nii.gz") + " --out-field " + path("d.h5") +
                       " --out-affine " + path("a.tfm"));
  ASSERT_EQ(r.code, 0) << r.output;
  // The affine file holds A: fixed points map where the truth maps them (head interior).
  const at::Tensor a = io::read_affine(path("a.tfm"));
  const at::Tensor x = io::physical_points(fixed_grid_).to(at::kDouble);
  const at::Tensor err = (io::transform_points(a, x) - io::transform_points(truth_, x)).norm(2, 1);
  const at::Tensor inside = x.norm(2, 1) < 25;
  EXPECT_LT(err.masked_select(inside).mean().item<double>(), 0.5); // a quarter voxel
  // apply with the affine, and with the field (.h5 transform), gives register's output.
  const at::Tensor warped = io::read_volume(path("w.nii.gz")).data;
  for (const std::string transform : {"a.tfm", "d.h5"}) {
    const Result ap = run("apply --field " + path(transform) + " --moving " + path("m.nii.gz") +
                          " --reference " + path("f.nii.gz") + " --out " + path("wa.nii.gz"));
    ASSERT_EQ(ap.code, 0) << ap.output;
    EXPECT_LT((io::read_volume(path("wa.nii.gz")).data - warped).abs().max().item<double>(), 1e-4) << transform;
    fs::remove(path("wa.nii.gz"));
  }
}

TEST_F(RegisterAffine, TheInverseFieldCarriesTheFixedImageBackOntoTheMovingGrid) {
  for (const char* name : {"f", "m"}) {
    const io::Volume v = io::read_volume(path(std::string(name) + ".nii.gz"));
    io::write_volume(path(std::string(name) + "l.nii.gz"),
                     {((v.data > 0.2).to(at::kInt) + (v.data > 0.45).to(at::kInt)), v.geometry});
  }
  const Result r = run("register --json --iterations 20,10 --fixed " + path("f.nii.gz") + " --moving " +
                       path("m.nii.gz") + " --out-warped " + path("w.nii.gz") + " --out-field " + path("d.nii.gz") +
                       " --out-inverse-field " + path("inv.nii.gz") + " --moving-labels " + path("ml.nii.gz") +
                       " --out-labels " + path("wl.nii.gz") + " --fixed-labels " + path("fl.nii.gz") +
                       " --qc " + path("qc.png"));
  ASSERT_EQ(r.code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output);
  EXPECT_GT(png_size(path("qc.png")).first, 500);
  // The round trip lands within a fraction of a 2 mm voxel; the fixed labels carried
  // back score about what the moving labels carried forward do.
  EXPECT_LT(j["inverse"]["residual_mm_median"].get<double>(), 0.3) << r.output;
  EXPECT_LT(j["inverse"]["residual_mm_p95"].get<double>(), 1.0) << r.output;
  EXPECT_GT(j["dice"].get<double>(), 0.8) << r.output;
  EXPECT_NEAR(j["inverse"]["dice"].get<double>(), j["dice"].get<double>(), 0.03) << r.output;
  // The field is on the moving grid, and apply uses it as it uses the forward one.
  io::Geometry grid;
  io::read_displacement_field(path("inv.nii.gz"), &grid);
  EXPECT_TRUE(io::same_grid(grid, moving_grid_));
  const Result ap = run("apply --field " + path("inv.nii.gz") + " --moving " + path("f.nii.gz") + " --reference " +
                        path("m.nii.gz") + " --out " + path("back.nii.gz") + " --qc " + path("back.png"));
  ASSERT_EQ(ap.code, 0) << ap.output;
  EXPECT_GT(png_size(path("back.png")).first, 500);
  EXPECT_EQ(run("apply --field " + path("inv.nii.gz") + " --moving " + path("f.nii.gz") + " --reference " +
                path("m.nii.gz") + " --out " + path("back2.nii.gz") + " --qc " + path("back.tif")).code, 1);
  const at::Tensor moving = io::read_volume(path("m.nii.gz")).data;
  const at::Tensor back = io::read_volume(path("back.nii.gz")).data;
  const at::Tensor fixed_on_moving = io::resample(io::read_volume(path("f.nii.gz")), moving_grid_,
                                                  io::Resampling::Linear).data;  // no registration
  EXPECT_LT((back - moving).abs().mean().item<double>(), 0.3 * (fixed_on_moving - moving).abs().mean().item<double>());
}

TEST_F(RegisterAffine, LabelMapOnAnotherGridNeedsForce) {
  // Labels whose header spacing differs from their image's (a real-world mismatch).
  io::Geometry off = moving_grid_;
  off.spacing[0] *= 0.97;
  io::write_volume(path("ml.nii.gz"), {at::ones({1, 1, 36, 48, 48}, at::kInt), off});
  const std::string args = "register --affine-only --affine-iterations 5,0 --fixed " + path("f.nii.gz") +
                           " --moving " + path("m.nii.gz") + " --out-warped " + path("w.nii.gz") +
                           " --out-field " + path("d.nii.gz") + " --moving-labels " + path("ml.nii.gz") +
                           " --out-labels " + path("wl.nii.gz");
  Result r = run(args);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(path("ml.nii.gz") + ": not on the grid of its image"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("--force"), std::string::npos) << r.output;
  for (const char* out : {"w.nii.gz", "d.nii.gz", "wl.nii.gz"}) EXPECT_FALSE(fs::exists(path(out))) << out;
  r = run(args + " --force");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("warning"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(path("wl.nii.gz")));
}

TEST_F(RegisterAffine, WildlyDifferentExtentsWarn) {
  io::Geometry huge = moving_grid_;
  huge.spacing = {7.0, 7.0, 7.0};  // ~250 mm against the fixed 80 mm
  io::write_volume(path("big.nii.gz"), {io::read_volume(path("m.nii.gz")).data, huge});
  const Result r = run("register --affine-only --affine-iterations 5,0 --fixed " + path("f.nii.gz") +
                       " --moving " + path("big.nii.gz") + " --out-warped " + path("w.nii.gz") +
                       " --out-field " + path("d.nii.gz"));
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("very different physical extents"), std::string::npos) << r.output;
}

// Frames of one acquisition whose headers disagree (the liver set's dataset18 cyc_1_10:
// 25 slices of 5 mm where its master has 25 of 4): a warning naming both spacings; none
// for the fixture's pair, whose grids differ.
TEST_F(RegisterAffine, SameGridOtherSpacingWarns) {
  const std::string out = " --affine-only --affine-iterations 5,0 --out-warped " + path("w.nii.gz") + " --out-field " + path("d.nii.gz");
  io::Geometry stretched = fixed_grid_;
  stretched.spacing[2] = 2.5;
  io::write_volume(path("s.nii.gz"), {io::read_volume(path("f.nii.gz")).data, stretched});
  Result r = run("register --fixed " + path("f.nii.gz") + " --moving " + path("s.nii.gz") + out);
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("the same grid (40×44×36 voxels) but different spacing (2×2×2 and 2×2×2.5 mm)"),
            std::string::npos) << r.output;
  r = run("register --fixed " + path("f.nii.gz") + " --moving " + path("m.nii.gz") + out);
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.output.find("one header is wrong"), std::string::npos) << r.output;
}

TEST_F(RegisterAffine, BadInputsAndOutputsFailBeforeAnyWork) {
  const std::string in = " --fixed " + path("f.nii.gz") + " --moving " + path("m.nii.gz");
  // An output folder that does not exist: exit 2 naming it, and no output at all.
  Result r = run("register" + in + " --out-warped " + path("w.nii.gz") + " --out-field " +
                 path("d.nii.gz") + " --out-affine " + path("nodir/a.tfm"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("nodir/a.tfm: output folder does not exist"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(path("w.nii.gz")));
  // An empty (corrupt) moving image.
  std::ofstream(path("four.nii")).close();
  r = run("register --fixed " + path("f.nii.gz") + " --moving " + path("four.nii") + " --out-warped " +
          path("w.nii.gz") + " --out-field " + path("d.nii.gz"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(path("four.nii")), std::string::npos) << r.output;
  // --device cuda where there is no GPU: a clear failure, not a crash.
  if (!ops::cuda_available()) {
    r = run("register --device cuda" + in + " --out-warped " + path("w.nii.gz") + " --out-field " + path("d.nii.gz"));
    EXPECT_EQ(r.code, 3) << r.output;
    // A CUDA build on a machine without a GPU, or a build without CUDA (the sanitizer
    // build): either way the message says why.
    EXPECT_TRUE(r.output.find("no CUDA device") != std::string::npos ||
                r.output.find("has no CUDA support") != std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(path("w.nii.gz")));
  }
}

}  // namespace
}  // namespace autoreg::test
