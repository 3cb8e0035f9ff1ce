// `autoreg segment` as a user runs it, on small synthetic subjects: each fusion method
// segments the target (its Dice against the target's own labels reported), probabilities
// and the warped atlases are written, and fusing the warped atlases again with
// --registered gives the same labels.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <fstream>

#include "autoreg/io/grid.h"
#include "autoreg/io/volume.h"
#include "cli.h"

namespace autoreg::test {
namespace {

class Segment : public Cli {
 protected:
  void SetUp() override {
    Cli::SetUp();
    write_sphere_subjects(5);
    std::ofstream(path("atlases.csv")) << "image,labels\ns0.nii.gz,s0_seg.nii.gz\ns1.nii.gz,s1_seg.nii.gz\n"
                                          "s3.nii.gz,s3_seg.nii.gz\ns4.nii.gz,s4_seg.nii.gz\n";
  }
  std::string segment(const std::string& more) const {
    return "segment --atlases " + path("atlases.csv") + " --target " + path("s2.nii.gz") + " --target-labels " +
           path("s2_seg.nii.gz") + " --iterations 20,10 --threads 2 --json" + more;
  }
  static nlohmann::json summary(const Result& r) {
    const size_t at = r.output.find("{\n");
    return nlohmann::json::parse(r.output.substr(at));
  }
};

TEST_F(Segment, EveryFusionSegmentsTheTarget) {
  for (const std::string method : {"majority", "weighted", "jlf"}) {
    const Result r = run(segment(" --fusion " + method + " --out " + path(method + ".nii.gz")));
    ASSERT_EQ(r.code, 0) << r.output;
    const nlohmann::json j = summary(r);
    EXPECT_EQ(j["fusion"], method);
    EXPECT_EQ(j["atlases"].size(), 4u);
    double best = 0;
    for (const auto& a : j["atlases"]) best = std::max(best, a["dice"].get<double>());
    EXPECT_GT(j["dice"].get<double>(), 0.85) << method;
    EXPECT_GT(j["dice"].get<double>(), best - 0.05) << method;
    const io::Volume out = io::read_volume(path(method + ".nii.gz"), io::PixelKind::Labels);
    EXPECT_TRUE(io::same_grid(out.geometry, io::read_volume(path("s2.nii.gz")).geometry));
  }
}

TEST_F(Segment, ProbabilitiesAndWarpedAtlasesThatRegisteredFusesAgain) {
  Result r = run(segment(" --out " + path("a.nii.gz") + " --out-probabilities " + path("p") + " --out-warped-dir " +
                         path("w") + " --out-inverse-fields --qc " + path("qc.png")));
  ASSERT_EQ(r.code, 0) << r.output;
  // Each atlas's inverse field lives on the atlas's own grid; the picture is whole.
  io::Geometry grid;
  io::read_displacement_field(path("w/atlas01_s0_inverse_field.nii.gz"), &grid);
  EXPECT_TRUE(io::same_grid(grid, io::read_volume(path("s0.nii.gz")).geometry));
  EXPECT_TRUE(fs::exists(path("w/atlas04_s4_inverse_field.nii.gz")));
  EXPECT_GT(png_size(path("qc.png")).first, 500);
  at::Tensor total;
  for (int l = 0; l <= 2; ++l) {
    const at::Tensor p = io::read_volume(path("p/label_" + std::to_string(l) + ".nii.gz")).data;
    total = total.defined() ? total + p : p;
  }
  // JLF's weights may be negative; clipped probabilities sum to about 1.
  EXPECT_LT((total - 1).abs().mean().item<double>(), 0.05);
  EXPECT_TRUE(fs::exists(path("w/atlases.csv")));
  r = run("segment --atlases " + path("w/atlases.csv") + " --target " + path("s2.nii.gz") + " --registered --out " +
          path("b.nii.gz"));
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_TRUE(at::equal(io::read_volume(path("a.nii.gz"), io::PixelKind::Labels).data,
                        io::read_volume(path("b.nii.gz"), io::PixelKind::Labels).data));
  // Atlases that are not on the target's grid cannot be fused as they are.
  r = run("segment --atlases " + path("atlases.csv") + " --target " + path("moving.nii.gz") + " --registered --out " +
          path("c.nii.gz"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("not on the target's grid"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(path("c.nii.gz")));
  r = run("segment --atlases " + path("w/atlases.csv") + " --target " + path("s2.nii.gz") + " --registered --model default --out " +
          path("c.nii.gz"));
  EXPECT_EQ(r.code, 1) << r.output;
  // Every registration option is refused with --registered, naming itself.
  r = run("segment --atlases " + path("w/atlases.csv") + " --target " + path("s2.nii.gz") +
          " --registered --regularizer tv --out " + path("c.nii.gz"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("no --regularizer"), std::string::npos) << r.output;
  r = run("segment --atlases " + path("w/atlases.csv") + " --target " + path("s2.nii.gz") +
          " --registered --out-inverse-fields --out-warped-dir " + path("w2") + " --out " + path("c.nii.gz"));
  EXPECT_EQ(r.code, 1) << r.output;
  r = run(segment(" --out " + path("c.nii.gz") + " --qc " + path("qc.jpg")));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("ending in .png"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace autoreg::test
