// `autoreg register --preset` and the intensity normalisation: the preset's settings,
// overridden by the options given, and the normalisation each image got (automatic: a
// CT's Hounsfield window, else percentiles; or --intensity-window), all in --json.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <nlohmann/json.hpp>

#include "autoreg/io/volume.h"
#include "cli.h"

namespace autoreg::test {
namespace {

class PresetsCli : public Cli {
 protected:
  void SetUp() override {
    Cli::SetUp();
    at::manual_seed(12);
    const at::Tensor blobs = at::upsample_trilinear3d(at::rand({1, 1, 4, 4, 4}), {16, 16, 16}, true);
    io::Geometry g;
    g.size = {16, 16, 16};
    g.spacing = {2, 2, 2};
    io::write_volume(path("f.nii.gz"), {blobs, g});
    io::write_volume(path("m.nii.gz"), {blobs.roll(1, 4), g});
    // A CT in Hounsfield units: air around a body of soft tissue (20-80 HU) with a bone.
    at::Tensor ct = at::full({1, 1, 16, 16, 16}, -1000.0);
    ct.narrow(2, 3, 10).narrow(3, 3, 10).narrow(4, 3, 10).copy_(20 + 60 * blobs.narrow(2, 3, 10).narrow(3, 3, 10).narrow(4, 3, 10));
    ct.narrow(2, 6, 3).narrow(3, 6, 3).narrow(4, 6, 3).fill_(900);
    io::write_volume(path("ct.nii.gz"), {ct.to(at::kInt), g});
  }
  // Few steps (quick) unless `steps` is empty: the preset's own levels.
  nlohmann::json summary(const std::string& options, const std::string& steps = "--iterations 5,5,5,5") {
    const Result r = run("register --json " + steps + " --affine-iterations 5,5 --fixed " + path("f.nii.gz") +
                         " --out-warped " + path("w.nii.gz") + " --out-field " + path("d.nii.gz") + " " + options);
    EXPECT_EQ(r.code, 0) << r.output;
    return r.code == 0 ? nlohmann::json::parse(r.output.substr(r.output.find('{')))["settings"] : nlohmann::json();
  }
};

TEST_F(PresetsCli, APresetSetsItsSettingsAndOptionsGivenOverrideThem) {
  const std::string m = "--moving " + path("m.nii.gz");
  nlohmann::json s = summary(m);
  EXPECT_EQ(s["preset"], "brain");
  EXPECT_EQ(s["pre_alignment"], "affine");
  EXPECT_EQ(s["regularizer"], "diffusion");
  s = summary(m + " --preset breathing", "");  // its own 140,140,70,40 on a 16³ volume: quick enough
  EXPECT_EQ(s["preset"], "breathing");
  EXPECT_EQ(s["pre_alignment"], "none");
  EXPECT_EQ(s["regularizer"], "tv");
  EXPECT_EQ(s["iterations"].size(), 4u);
  EXPECT_EQ(s["full_resolution"], true);
  EXPECT_EQ(s["regularization"], 1.0);
  EXPECT_EQ(s["learning_rate"], 0.4);
  EXPECT_EQ(s["compare_finer"], 2);
  EXPECT_EQ(summary(m)["compare_finer"], 0);
  s = summary(m + " --preset breathing --regularizer diffusion --rigid --learning-rate 0.2 --compare-finer 1");
  EXPECT_EQ(s["compare_finer"], 1);
  EXPECT_EQ(s["regularizer"], "diffusion");
  EXPECT_EQ(s["learning_rate"], 0.2);
  EXPECT_EQ(s["pre_alignment"], "rigid");
  const Result unknown = run("register --preset lung --fixed " + path("f.nii.gz") + " " + m + " --out-warped " +
                             path("w2.nii.gz") + " --out-field " + path("d2.nii.gz"));
  EXPECT_EQ(unknown.code, 1) << unknown.output;
  EXPECT_NE(unknown.output.find("breathing"), std::string::npos) << unknown.output;  // the choices are listed
  const Result step = run("register --learning-rate 0 --fixed " + path("f.nii.gz") + " " + m + " --out-warped " +
                          path("w2.nii.gz") + " --out-field " + path("d2.nii.gz"));
  EXPECT_EQ(step.code, 1) << step.output;
  EXPECT_NE(step.output.find("--learning-rate must be a positive number"), std::string::npos) << step.output;
  // The NCC window in mm: recorded; 0 (voxels) by default; a negative one refused.
  EXPECT_EQ(s["ncc_window_mm"], 0.0);
  EXPECT_EQ(summary(m + " --preset breathing --ncc-window-mm 8")["ncc_window_mm"], 8.0);
  // Its older spelling is still read; both spellings at once are refused.
  EXPECT_EQ(summary(m + " --preset breathing --ncc-window 9")["ncc_window_mm"], 9.0);
  const Result both = run("register --ncc-window 8 --ncc-window-mm 8 --fixed " + path("f.nii.gz") + " " + m +
                          " --out-warped " + path("w2.nii.gz") + " --out-field " + path("d2.nii.gz"));
  EXPECT_EQ(both.code, 1) << both.output;
  EXPECT_NE(both.output.find("give --ncc-window-mm once"), std::string::npos) << both.output;
  const Result window = run("register --ncc-window -1 --fixed " + path("f.nii.gz") + " " + m + " --out-warped " +
                            path("w2.nii.gz") + " --out-field " + path("d2.nii.gz"));
  EXPECT_EQ(window.code, 1) << window.output;
  EXPECT_NE(window.output.find("--ncc-window-mm must be"), std::string::npos) << window.output;
}

TEST_F(PresetsCli, ACtGetsItsHounsfieldWindowUnlessAWindowIsGiven) {
  nlohmann::json s = summary("--moving " + path("ct.nii.gz"));
  EXPECT_EQ(s["intensity"]["moving"]["rule"], "ct");
  EXPECT_EQ(s["intensity"]["moving"]["lo"], -1000.0);
  EXPECT_EQ(s["intensity"]["moving"]["hi"], 1000.0);
  EXPECT_EQ(s["intensity"]["fixed"]["rule"], "percentiles");
  s = summary("--moving " + path("ct.nii.gz") + " --intensity-window -200,300");
  EXPECT_EQ(s["intensity"]["moving"]["rule"], "window");
  EXPECT_EQ(s["intensity"]["fixed"]["lo"], -200.0);
  for (const std::string bad : {"300,-200", "1", "a,b"}) {
    EXPECT_EQ(run("register --intensity-window " + bad + " --fixed " + path("f.nii.gz") + " --moving " + path("ct.nii.gz") +
                  " --out-warped " + path("w3.nii.gz") + " --out-field " + path("d3.nii.gz")).code, 1) << bad;
  }
}

}  // namespace
}  // namespace autoreg::test
