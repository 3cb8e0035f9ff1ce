// `autoreg template` from the command line: a small cohort gives the template, every
// subject's outputs and the QC page (exit 0); two ranks (--nproc 2) give the one-process
// result bit for bit; bad input and bad settings give their one line and exit codes 2
// and 1.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <filesystem>
#include <fstream>

#include "autoreg/io/field.h"
#include "autoreg/io/volume.h"
#include "cli.h"

namespace autoreg::test {
namespace {

class TemplateCli : public Cli {
 protected:
  void SetUp() override {
    Cli::SetUp();
    at::manual_seed(3);
    const at::Tensor blobs = at::upsample_trilinear3d(at::rand({1, 1, 4, 4, 4}), {12, 16, 20}, true);
    io::Geometry g;  // not a cube: the grid's (i, j, k) sizes are the tensor's (W, H, D)
    g.size = {20, 16, 12};
    g.spacing = {2, 2, 2};
    std::ofstream csv(path("subjects.csv"));
    csv << "image\n";
    for (int i = 0; i < 3; ++i) {
      io::write_volume(path("s" + std::to_string(i) + ".nii.gz"), {blobs.roll(i - 1, 4), g});
      csv << "s" << i << ".nii.gz\n";
    }
    std::ofstream one(path("one.csv"));
    one << "image\ns0.nii.gz\n";
    // Labels for every subject, s1's on another grid than its image.
    std::ofstream labelled(path("labelled.csv"));
    labelled << "image,labels\n";
    for (int i = 0; i < 3; ++i) {
      io::Geometry lg = g;
      if (i == 1) lg.size = {8, 8, 8};
      io::write_volume(path("l" + std::to_string(i) + ".nii.gz"), {at::ones({1, 1, lg.size[2], lg.size[1], lg.size[0]}, at::kInt), lg});
      labelled << "s" << i << ".nii.gz,l" << i << ".nii.gz\n";
    }
    io::write_volume(path("flat.nii.gz"), {at::full({1, 1, 12, 16, 20}, 5.0f), g});
    std::ofstream flat(path("flat.csv"));
    flat << "image\ns0.nii.gz\nflat.nii.gz\n";
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

// Each rank registers every other subject and shares the results exactly, so with the
// same threads per process the template and every subject's outputs are the one
// process's, bit for bit.
TEST_F(TemplateCli, TwoRanksGiveTheOneProcessResult) {
  const std::string options = " --template-iterations 2 --iterations 10,5 --affine-iterations 5,5 --threads 1";
  const Result one = run("template --images " + path("subjects.csv") + " --out " + path("one") + options);
  ASSERT_EQ(one.code, 0) << one.output;
  const Result two = run("template --images " + path("subjects.csv") + " --out " + path("two") + options + " --nproc 2");
  ASSERT_EQ(two.code, 0) << two.output;
  EXPECT_NE(two.output.find("template: 2 ranks, each"), std::string::npos) << two.output;
  for (const char* f : {"template.nii.gz", "iterations/template_0.nii.gz", "iterations/template_1.nii.gz", "s0_warped.nii.gz",
                        "s1_warped.nii.gz", "s2_warped.nii.gz"}) {
    const at::Tensor a = io::read_volume(path(std::string("one/") + f)).data;
    const at::Tensor b = io::read_volume(path(std::string("two/") + f)).data;
    EXPECT_TRUE(at::equal(a, b)) << f << ": differs by " << (a - b).abs().max().item<double>();
  }
  for (const char* f : {"s0_field.nii.gz", "s1_field.nii.gz", "s2_field.nii.gz", "s1_inverse.nii.gz"}) {
    const at::Tensor a = io::read_displacement_field(path(std::string("one/") + f));
    const at::Tensor b = io::read_displacement_field(path(std::string("two/") + f));
    EXPECT_TRUE(at::equal(a, b)) << f << ": differs by " << (a - b).abs().max().item<double>();
  }
  // The template moved: the comparison could tell a wrong gather from a right one.
  const at::Tensor t0 = io::read_volume(path("one/iterations/template_0.nii.gz")).data;
  const at::Tensor t2 = io::read_volume(path("one/template.nii.gz")).data;
  EXPECT_GT((t0 - t2).abs().max().item<double>(), 1e-3);
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
  r = run("template --images " + path("flat.csv") + " --out " + path("t4"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("flat.nii.gz: no contrast to register"), std::string::npos) << r.output;
}

// Bad input that only rank 1 reads (s1's labels) stops both ranks: exit 2, the file named.
TEST_F(TemplateCli, BadInputOnOneRankStopsEveryRank) {
  const Result r = run("template --images " + path("labelled.csv") + " --out " + path("t") +
                       " --template-iterations 1 --iterations 5,5 --affine-iterations 5,5 --threads 1 --nproc 2");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("l1.nii.gz: not on the grid of its image"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(path("t/template_labels.nii.gz")));
}

}  // namespace
}  // namespace autoreg::test
