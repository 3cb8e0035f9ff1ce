// `autoreg register --pairs`: many pairs in one run, outputs named after the inputs, a
// summary (CSV and JSON) with Dice where both label maps are given; a pair that cannot be
// read is reported and skipped while the others complete (exit 5); --resume registers only
// what is not complete.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>

#include "autoreg/io/volume.h"
#include "cli.h"

namespace autoreg::test {
namespace {

class Pairs : public Cli {
 protected:
  void SetUp() override {
    Cli::SetUp();
    write_sphere_subjects(4);
    std::ofstream(path("pairs.csv")) << "fixed,moving,moving_labels,fixed_labels\n"
                                        "s0.nii.gz,s1.nii.gz,s1_seg.nii.gz,s0_seg.nii.gz\n"
                                        "s0.nii.gz,nope.nii.gz,,\n"
                                        "s2.nii.gz,s3.nii.gz,,\n"
                                        "s3.nii.gz,s1.nii.gz,s1_seg.nii.gz,\n";
  }
  std::string pairs(const std::string& more = "") const {
    return "register --pairs " + path("pairs.csv") + " --out-dir " + path("out") + " --iterations 10,5 --threads 2" + more;
  }
  nlohmann::json summary() const {
    std::ifstream in(path("out/summary.json"));
    return nlohmann::json::parse(in);
  }
};

TEST_F(Pairs, AFailingPairIsSkippedAndTheOthersComplete) {
  Result r = run(pairs());
  EXPECT_EQ(r.code, 5) << r.output;
  EXPECT_NE(r.output.find("pair 2/4 nope_to_s0 (" + path("pairs.csv") + ":3): failed, skipped: " + path("nope.nii.gz")),
            std::string::npos) << r.output;
  EXPECT_NE(r.output.find("1 of 4 pairs failed"), std::string::npos) << r.output;
  for (const char* f : {"s1_to_s0_warped.nii.gz", "s1_to_s0_field.nii.gz", "s1_to_s0_labels.nii.gz", "s1_to_s0.json",
                        "s3_to_s2_warped.nii.gz", "s3_to_s2_field.nii.gz", "s1_to_s3_labels.nii.gz", "summary.csv"}) {
    EXPECT_TRUE(fs::exists(path("out/") + f)) << f;
  }
  EXPECT_FALSE(fs::exists(path("out/nope_to_s0_warped.nii.gz")));
  const nlohmann::json s = summary();
  ASSERT_EQ(s["pairs"].size(), 4u);
  EXPECT_EQ(s["done"], 3);
  EXPECT_EQ(s["failed"], 1);
  EXPECT_GT(s["pairs"][0]["dice"].get<double>(), 0.5);  // both label maps given
  EXPECT_TRUE(s["pairs"][3]["dice"].is_null());          // no fixed labels
  EXPECT_EQ(s["pairs"][1]["status"], "failed");
  EXPECT_GT(s["pairs"][0]["stage_seconds"]["deformable"].get<double>(), 0);
  std::ifstream csv(path("out/summary.csv"));
  int lines = 0;
  for (std::string line; std::getline(csv, line);) ++lines;
  EXPECT_EQ(lines, 5);

  // A run killed during a pair leaves that pair without its summary file: --resume
  // registers it again and skips the complete ones.
  fs::remove(path("out/s3_to_s2.json"));
  r = run(pairs(" --resume"));
  EXPECT_EQ(r.code, 5) << r.output;
  EXPECT_NE(r.output.find("pair 1/4 s1_to_s0: complete, skipped (--resume)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("pair 3/4 s3_to_s2: "), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("pair 3/4 s3_to_s2: complete"), std::string::npos) << r.output;
  EXPECT_EQ(summary()["skipped"], 2);
  EXPECT_TRUE(fs::exists(path("out/s3_to_s2.json")));
}

// The page a headless browser sees after its scripts ran (--dump-dom), or "" when no
// chromium is installed (scripts/setup.sh installs Debian's).
std::string page_in_a_browser(const std::string& html) {
  if (run_command("command -v chromium >/dev/null 2>&1").code != 0) return "";
  return run_command("timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage "
                     "--allow-file-access-from-files --virtual-time-budget=10000 --dump-dom 'file://" + html +
                     "' 2>/dev/null").output;
}

TEST_F(Pairs, EveryPairHasItsPictureAndInverseAndThePageShowsThemWorstFirst) {
  const Result r = run(pairs(" --inverse"));
  ASSERT_EQ(r.code, 5) << r.output;
  const nlohmann::json s = summary();
  for (const char* name : {"s1_to_s0", "s3_to_s2", "s1_to_s3"}) {
    EXPECT_GT(png_size(path("out/") + name + "_qc.png").first, 500) << name;
    EXPECT_TRUE(fs::exists(path("out/") + name + "_inverse_field.nii.gz")) << name;
  }
  EXPECT_FALSE(fs::exists(path("out/nope_to_s0_qc.png")));
  // Inverse figures in the summary: the round trip within a voxel inside the fixed
  // labels, and the fixed labels carried back scoring about the forward Dice.
  const nlohmann::json& first = s["pairs"][0];
  EXPECT_LT(first["inverse"]["residual_mm_p95"].get<double>(), 1.0) << first.dump();
  EXPECT_NEAR(first["inverse"]["dice"].get<double>(), first["dice"].get<double>(), 0.05) << first.dump();
  // index.html: the failed pair first, then by Dice; every picture loads in a browser.
  std::ifstream in(path("out/index.html"));
  const std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t failed = html.find("nope_to_s0"), ok = html.find("s1_to_s0_qc.png");
  ASSERT_NE(failed, std::string::npos);
  ASSERT_NE(ok, std::string::npos);
  EXPECT_LT(failed, ok);
  EXPECT_EQ(html.find("nope_to_s0_qc.png"), std::string::npos);
  const std::string dom = page_in_a_browser(path("out/index.html"));
  if (dom.empty()) GTEST_SKIP() << "no chromium to open the page with (scripts/setup.sh installs it)";
  EXPECT_NE(dom.find("data-loaded=\"3\""), std::string::npos) << dom.substr(0, 2000);
  EXPECT_NE(dom.find("data-total=\"3\""), std::string::npos) << dom.substr(0, 2000);
  EXPECT_NE(dom.find("loaded 3 of 3 pictures"), std::string::npos) << dom.substr(0, 2000);
  // A picture that cannot be loaded is counted as such.
  fs::remove(path("out/s3_to_s2_qc.png"));
  EXPECT_NE(page_in_a_browser(path("out/index.html")).find("loaded 2 of 3 pictures"), std::string::npos);
}

TEST_F(Pairs, RefusesOptionsForOnePair) {
  Result r = run(pairs(" --fixed " + path("s0.nii.gz")));
  EXPECT_EQ(r.code, 1) << r.output;
  r = run("register --pairs " + path("pairs.csv"));
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("--pairs needs --out-dir"), std::string::npos) << r.output;
  std::ofstream(path("empty.csv")) << "fixed,moving\n";
  r = run("register --pairs " + path("empty.csv") + " --out-dir " + path("o"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(path("empty.csv") + ": lists no pairs"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace autoreg::test
