// `autoreg template` from the command line: a small cohort gives the template, every
// subject's outputs and the QC page (exit 0); bad input and bad settings give their one
// line and exit codes 2 and 1.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <filesystem>
#include <fstream>

#include "autoreg/io/volume.h"
#include "cli.h"

namespace autoreg::test {
namespace {

class TemplateCli : public Cli {
 protected:
  void SetUp() override {
    Cli::SetUp();
    at::manual_seed(3);
    const at::Tensor blobs = at::upsample_trilinear3d(at::rand({1, 1, 4, 4, 4}), {16, 16, 16}, true);
    io::Geometry g;
    g.size = {16, 16, 16};
    g.spacing = {2, 2, 2};
    std::ofstream csv(path("subjects.csv"));
    csv << "image\n";
    for (int i = 0; i < 3; ++i) {
      io::write_volume(path("s" + std::to_string(i) + ".nii.gz"), {blobs.roll(i - 1, 4), g});
      csv << "s" << i << ".nii.gz\n";
    }
    std::ofstream one(path("one.csv"));
    one << "image\ns0.nii.gz\n";
  }
};

TEST_F(TemplateCli, BuildsTheTemplateAndEverySubjectsOutputs) {
  const Result r = run("template --images " + path("subjects.csv") + " --out " + path("t") +
                       " --template-iterations 2 --iterations 10,5 --affine-iterations 5,5 --threads 2");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("iteration 2/2"), std::string::npos) << r.output;
  for (const char* f : {"template.nii.gz", "s0_field.nii.gz", "s1_inverse.nii.gz", "s2_warped.nii.gz", "index.html",
                        "summary.json", "iterations/template_2.png"}) {
    EXPECT_TRUE(std::filesystem::exists(path(std::string("t/") + f))) << f;
  }
}

TEST_F(TemplateCli, BadInputAndSettingsAreRefused) {
  Result r = run("template --images " + path("one.csv") + " --out " + path("t1"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("one.csv: a template needs at least two subjects"), std::string::npos) << r.output;
  r = run("template --images " + path("subjects.csv") + " --out " + path("t2") + " --step 0");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("--step"), std::string::npos) << r.output;
  r = run("template --images " + path("subjects.csv") + " --out " + path("t3") + " --initial " + path("nothing.nii.gz"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("nothing.nii.gz"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace autoreg::test
