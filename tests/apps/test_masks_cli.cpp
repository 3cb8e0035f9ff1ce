// `autoreg register --fixed-mask/--moving-mask` (cost-function masking) and `--rigid`:
// what lies outside the fixed mask does not change the field, what lies inside does;
// bad masks are refused before any work; a rigid pre-alignment is a rotation; --pairs
// takes masks as columns.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <fstream>

#include "autoreg/io/field.h"
#include "autoreg/io/transform.h"
#include "autoreg/io/volume.h"
#include "autoreg/ops.h"
#include "cli.h"

namespace autoreg::test {
namespace {

class MasksCli : public Cli {
 protected:
  void SetUp() override {
    Cli::SetUp();
    at::manual_seed(11);
    fixed_ = at::upsample_trilinear3d(at::rand({1, 1, 4, 5, 6}), {16, 20, 24}, true);
    const at::Tensor v = at::upsample_trilinear3d((at::rand({1, 3, 3, 3, 3}) * 2 - 1) * 1.5, {16, 20, 24}, true);
    const at::Tensor moving = ops::warp(fixed_, ops::integrate(-v, 7), ops::Interpolation::Linear, ops::Padding::Border);
    grid_.size = {24, 20, 16};
    io::write_volume(path("f.nii.gz"), {fixed_, grid_});
    io::write_volume(path("m.nii.gz"), {moving, grid_});
    // The fixed mask: i < 12 (its edge on the 4-voxel blocks of the coarsest level).
    mask_ = at::zeros({1, 1, 16, 20, 24}, at::kInt);
    mask_.narrow(4, 0, 12).fill_(1);
    io::write_volume(path("mask.nii.gz"), {mask_, grid_});
  }
  // register with MSE (voxel by voxel, so that the mask's edge is exact) and the mask.
  Result register_with_mask(const std::string& fixed, const std::string& field, const std::string& extra = "") {
    return run("register --similarity mse --regularization 0.05 --iterations 30,30 --fixed " + path(fixed) + " --moving " +
               path("m.nii.gz") + " --fixed-mask " + path("mask.nii.gz") + " --out-warped " + path(field + "_w.nii.gz") +
               " --out-field " + path(field) + extra);
  }
  at::Tensor fixed_, mask_;
  io::Geometry grid_;
};

TEST_F(MasksCli, OutsideTheFixedMaskChangesNothingInsideChangesTheField) {
  ASSERT_EQ(register_with_mask("f.nii.gz", "d.nii.gz").code, 0);
  const at::Tensor noise = at::rand_like(fixed_);
  const at::Tensor inside = mask_.to(at::kFloat);
  io::write_volume(path("f_out.nii.gz"), {fixed_ + noise * (1 - inside), grid_});
  io::write_volume(path("f_in.nii.gz"), {fixed_ + noise * inside, grid_});
  ASSERT_EQ(register_with_mask("f_out.nii.gz", "d_out.nii.gz").code, 0);
  ASSERT_EQ(register_with_mask("f_in.nii.gz", "d_in.nii.gz").code, 0);
  const at::Tensor d = io::read_displacement_field(path("d.nii.gz"));
  EXPECT_TRUE(at::equal(io::read_displacement_field(path("d_out.nii.gz")), d));
  EXPECT_FALSE(at::equal(io::read_displacement_field(path("d_in.nii.gz")), d));
  // Without the mask the noise outside it changes the field.
  const std::string plain = "register --similarity mse --regularization 0.05 --iterations 30,30 --moving " + path("m.nii.gz");
  ASSERT_EQ(run(plain + " --fixed " + path("f.nii.gz") + " --out-warped " + path("a.nii.gz") + " --out-field " + path("da.nii.gz")).code, 0);
  ASSERT_EQ(run(plain + " --fixed " + path("f_out.nii.gz") + " --out-warped " + path("b.nii.gz") + " --out-field " + path("db.nii.gz")).code, 0);
  EXPECT_FALSE(at::equal(io::read_displacement_field(path("da.nii.gz")), io::read_displacement_field(path("db.nii.gz"))));
}

TEST_F(MasksCli, BadMasksAreRefusedBeforeAnyWork) {
  io::write_volume(path("empty.nii.gz"), {at::zeros_like(mask_), grid_});
  const std::string pair = "register --fixed " + path("f.nii.gz") + " --moving " + path("m.nii.gz") + " --out-warped " +
                           path("w.nii.gz") + " --out-field " + path("d.nii.gz");
  Result r = run(pair + " --moving-mask " + path("empty.nii.gz"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("empty.nii.gz: the mask has no voxel inside"), std::string::npos) << r.output;
  io::Geometry other = grid_;
  other.spacing = {2, 2, 2};
  io::write_volume(path("off.nii.gz"), {mask_, other});
  r = run(pair + " --fixed-mask " + path("off.nii.gz"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("off.nii.gz: not on the grid of its image"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(path("w.nii.gz")));
  r = run(pair + " --fixed-mask " + path("off.nii.gz") + " --force --iterations 5,5 --affine-iterations 5,5");
  EXPECT_EQ(r.code, 0) << r.output;
  // --rigid sets the affine stage, which --no-affine turns off.
  EXPECT_EQ(run(pair + " --rigid --no-affine").code, 1);
}

// The masks follow the finest level when it compares the full-resolution images (they
// were pooled to the half-resolution grid there, a shape error).
TEST_F(MasksCli, MasksWorkWithTheFullResolutionLevel) {
  const Result r = register_with_mask("f.nii.gz", "d_full.nii.gz", " --full-resolution --moving-mask " + path("mask.nii.gz"));
  EXPECT_EQ(r.code, 0) << r.output;
}

TEST_F(MasksCli, RigidPreAlignmentIsARotation) {
  const Result r = run("register --affine-only --rigid --fixed " + path("f.nii.gz") + " --moving " + path("m.nii.gz") +
                       " --out-warped " + path("w.nii.gz") + " --out-field " + path("d.nii.gz") + " --out-affine " + path("a.tfm"));
  ASSERT_EQ(r.code, 0) << r.output;
  const at::Tensor a = io::read_affine(path("a.tfm")).slice(0, 0, 3).slice(1, 0, 3);
  EXPECT_LT((a.t().matmul(a) - at::eye(3, at::kDouble)).abs().max().item<double>(), 1e-6);
}

TEST_F(MasksCli, PairsTakeMasksAsColumns) {
  ASSERT_EQ(register_with_mask("f.nii.gz", "d.nii.gz").code, 0);
  std::ofstream(path("pairs.csv")) << "fixed,moving,fixed_mask\nf.nii.gz,m.nii.gz,mask.nii.gz\n";
  const Result r = run("register --similarity mse --regularization 0.05 --iterations 30,30 --pairs " + path("pairs.csv") +
                       " --out-dir " + path("out"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(at::equal(io::read_displacement_field(path("out/m_to_f_field.nii.gz")),
                        io::read_displacement_field(path("d.nii.gz"))));
  EXPECT_EQ(run("register --fixed-mask " + path("mask.nii.gz") + " --pairs " + path("pairs.csv") + " --out-dir " + path("o2")).code, 1);
}

}  // namespace
}  // namespace autoreg::test
