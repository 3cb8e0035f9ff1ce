// `autoreg register --pairs`: many pairs in one run, outputs named after the inputs, a
// summary (CSV and JSON) with Dice where both label maps are given; a pair that cannot be
// read is reported and skipped while the others complete (exit 5); --resume registers only
// what is not complete; shards (--shard K/N or a job array's index) register every N-th
// pair and --merge joins their summaries into the whole run's.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <vector>

#include "autoreg/io/volume.h"
#include "cli.h"

namespace autoreg::test {
namespace {

class Pairs : public Cli {
 protected:
  void SetUp() override {
    Cli::SetUp();
    // Run inside a job array, every --pairs run would be a shard of it.
    ::unsetenv("SLURM_ARRAY_TASK_ID");
    ::unsetenv("JOB_COMPLETION_INDEX");
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
  // The fastest registration the tests run (a few affine steps), of the pairs in `csv`.
  std::string fast(const std::string& csv, const std::string& out, const std::string& more = "") const {
    return "register --pairs " + path(csv) + " --out-dir " + out + " --affine-only --affine-iterations 5,0 --threads 2" + more;
  }
};

// The pairs a summary (.json) lists, in its order.
std::vector<std::string> names_in(const std::string& summary_json) {
  std::ifstream in(summary_json);
  const nlohmann::json summary = nlohmann::json::parse(in);
  std::vector<std::string> names;
  for (const auto& row : summary.at("pairs")) names.push_back(row.at("pair"));
  return names;
}

// A summary.csv's columns pair, fixed, moving and status (the timings differ between runs).
std::vector<std::string> outcomes(const std::string& csv) {
  std::ifstream in(csv);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    size_t end = 0;
    for (int column = 0; column < 4 && end != std::string::npos; ++column) end = line.find(',', end + 1);
    lines.push_back(line.substr(0, end));
  }
  return lines;
}

// The files in `dir` but the shards' summaries.
std::set<std::string> files_but_shard_summaries(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("summary.shard-", 0) != 0) names.insert(name);
  }
  return names;
}

std::string shard_summary(const std::string& dir, int k, int n) {
  return dir + "/summary.shard-" + std::to_string(k) + "-of-" + std::to_string(n) + ".json";
}

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

// Shards 1/N … N/N of 2 pairs and of 4 (one failing), for N = 1, 2, 3, register each pair
// once, into the files the whole run writes; --merge then writes its summary and page.
TEST_F(Pairs, ShardsRegisterEveryPairOnceAndMergeIntoTheWholeRunsSummary) {
  std::ofstream(path("two.csv")) << "fixed,moving\ns0.nii.gz,s1.nii.gz\ns2.nii.gz,s3.nii.gz\n";
  for (const std::string csv : {"two.csv", "pairs.csv"}) {
    const std::string whole = path(csv + "-whole");
    const Result all = run(fast(csv, whole));
    ASSERT_EQ(all.code, csv == "two.csv" ? 0 : 5) << all.output;
    const std::vector<std::string> names = names_in(whole + "/summary.json");
    for (int n = 1; n <= 3; ++n) {
      const std::string dir = path(csv + "-" + std::to_string(n));
      std::map<std::string, int> registered;
      for (int k = 1; k <= n; ++k) {
        const std::string shard = std::to_string(k) + "/" + std::to_string(n);
        const Result r = run(fast(csv, dir, " --shard " + shard));
        EXPECT_TRUE(r.code == 0 || r.code == 5) << r.output;  // 5: the shard has the failing pair
        EXPECT_NE(r.output.find("shard " + shard + " from --shard: "), std::string::npos) << r.output;
        std::vector<std::string> expected;
        for (size_t i = 0; i < names.size(); ++i) {
          if (static_cast<int>(i) % n == k - 1) expected.push_back(names[i]);
        }
        const std::vector<std::string> mine = names_in(shard_summary(dir, k, n));
        EXPECT_EQ(mine, expected) << csv << ", shard " << shard;
        for (const auto& name : mine) ++registered[name];
      }
      EXPECT_EQ(registered.size(), names.size()) << csv << ", " << n << " shards";
      for (const auto& [name, times] : registered) EXPECT_EQ(times, 1) << name << ", " << n << " shards";
      EXPECT_FALSE(fs::exists(dir + "/summary.csv"));
      EXPECT_FALSE(fs::exists(dir + "/index.html"));
      const Result merged = run(fast(csv, dir, " --merge"));
      EXPECT_EQ(merged.code, all.code) << merged.output;
      EXPECT_EQ(files_but_shard_summaries(dir), files_but_shard_summaries(whole)) << csv << ", " << n << " shards";
      EXPECT_EQ(outcomes(dir + "/summary.csv"), outcomes(whole + "/summary.csv")) << csv << ", " << n << " shards";
    }
  }
}

// Without --shard, a Slurm array task or a Kubernetes indexed Job's pod takes its index's
// shard and says so; --shard wins over them.
TEST_F(Pairs, AJobArrayIndexChoosesTheShard) {
  const std::string autoreg = std::string(AUTOREG_BIN) + " ";
  Result r = run_command("SLURM_ARRAY_TASK_ID=5 SLURM_ARRAY_TASK_MIN=4 SLURM_ARRAY_TASK_COUNT=3 " + autoreg +
                         fast("pairs.csv", path("out")) + " 2>&1");
  EXPECT_EQ(r.code, 5) << r.output;  // shard 2/3 holds the second row only: the failing pair
  EXPECT_NE(r.output.find("shard 2/3 from SLURM_ARRAY_TASK_ID=5 (SLURM_ARRAY_TASK_MIN=4, SLURM_ARRAY_TASK_COUNT=3): "
                          "1 of 4 pairs"), std::string::npos) << r.output;
  EXPECT_EQ(names_in(shard_summary(path("out"), 2, 3)), std::vector<std::string>{"nope_to_s0"});
  r = run_command("JOB_COMPLETION_INDEX=1 AUTOREG_SHARD_COUNT=3 " + autoreg + fast("pairs.csv", path("k8s")) + " 2>&1");
  EXPECT_EQ(r.code, 5) << r.output;
  EXPECT_NE(r.output.find("shard 2/3 from JOB_COMPLETION_INDEX=1 (AUTOREG_SHARD_COUNT=3): 1 of 4 pairs"), std::string::npos)
      << r.output;
  EXPECT_EQ(names_in(shard_summary(path("k8s"), 2, 3)), std::vector<std::string>{"nope_to_s0"});
  r = run_command("SLURM_ARRAY_TASK_ID=0 SLURM_ARRAY_TASK_COUNT=3 " + autoreg +
                  fast("pairs.csv", path("explicit"), " --shard 2/4") + " 2>&1");
  EXPECT_EQ(r.code, 5) << r.output;
  EXPECT_NE(r.output.find("shard 2/4 from --shard: 1 of 4 pairs"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(shard_summary(path("explicit"), 2, 4)));
  EXPECT_FALSE(fs::exists(shard_summary(path("explicit"), 1, 3)));
}

TEST_F(Pairs, RefusesBadShards) {
  for (const char* shard : {"3/2", "0/2", "1/0", "2", "a/b", "1/2x", "-1/2", "/2", "1/"}) {
    const Result r = run(fast("pairs.csv", path("out"), std::string(" --shard ") + shard));
    EXPECT_EQ(r.code, 1) << shard << ": " << r.output;
    EXPECT_NE(r.output.find(std::string("--shard ") + shard + ": "), std::string::npos) << r.output;
  }
  const std::string autoreg = std::string(AUTOREG_BIN) + " ";
  const std::pair<std::string, std::string> environments[] = {
      {"SLURM_ARRAY_TASK_ID=3 SLURM_ARRAY_TASK_COUNT=3", "shard index 3 is not in 0..2"},
      {"SLURM_ARRAY_TASK_ID=3 SLURM_ARRAY_TASK_MIN=4 SLURM_ARRAY_TASK_COUNT=3", "shard index -1 is not in 0..2"},
      {"SLURM_ARRAY_TASK_ID=x SLURM_ARRAY_TASK_COUNT=3", "SLURM_ARRAY_TASK_ID=x is not a whole number"},
      {"SLURM_ARRAY_TASK_ID=1", "SLURM_ARRAY_TASK_COUNT is not"},
      {"JOB_COMPLETION_INDEX=0", "AUTOREG_SHARD_COUNT is not"},
      {"JOB_COMPLETION_INDEX=2 AUTOREG_SHARD_COUNT=2", "shard index 2 is not in 0..1"},
  };
  for (const auto& [env, message] : environments) {
    const Result r = run_command(env + " " + autoreg + fast("pairs.csv", path("out")) + " 2>&1");
    EXPECT_EQ(r.code, 1) << env << ": " << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << env << ": " << r.output;
  }
  EXPECT_FALSE(fs::exists(path("out")));  // refused before any work
  EXPECT_EQ(run(fast("pairs.csv", path("out"), " --merge --shard 1/2")).code, 1);
  EXPECT_EQ(run(fast("pairs.csv", path("out"), " --allow-missing")).code, 1);
  EXPECT_EQ(run("register --fixed " + path("s0.nii.gz") + " --moving " + path("s1.nii.gz") + " --out-warped " +
                path("w.nii.gz") + " --out-field " + path("f.nii.gz") + " --shard 1/2").code, 1);
}

// --merge refuses (exit 2, naming them) pairs that no shard registered or two did;
// --allow-missing lists the missing ones. --resume works within a shard.
TEST_F(Pairs, MergeRefusesMissingOrDoubledPairsAndResumeWorksPerShard) {
  const std::string out = path("out");
  Result r = run(fast("pairs.csv", out, " --merge"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("no shard summaries"), std::string::npos) << r.output;
  r = run(fast("pairs.csv", out, " --shard 1/2"));  // rows 1 and 3: s1_to_s0, s3_to_s2
  ASSERT_EQ(r.code, 0) << r.output;
  r = run(fast("pairs.csv", out, " --merge"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("pairs in no shard's summary (run their shards, or merge with --allow-missing): "
                          "nope_to_s0, s1_to_s3"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out + "/summary.csv"));
  r = run(fast("pairs.csv", out, " --merge --allow-missing"));
  EXPECT_EQ(r.code, 5) << r.output;
  const nlohmann::json s = summary();
  ASSERT_EQ(s["pairs"].size(), 4u);
  EXPECT_EQ(s["pairs"][0]["status"], "done");
  EXPECT_EQ(s["pairs"][1]["status"], "missing");
  EXPECT_EQ(s["missing"], 2);
  EXPECT_TRUE(fs::exists(out + "/index.html"));

  fs::copy_file(shard_summary(out, 1, 2), shard_summary(out, 1, 3));  // a stale summary of another split
  r = run(fast("pairs.csv", out, " --merge --allow-missing"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("s1_to_s0 (summary.shard-1-of-2.json and summary.shard-1-of-3.json)"), std::string::npos)
      << r.output;
  fs::remove(shard_summary(out, 1, 3));

  fs::remove(out + "/s3_to_s2.json");  // killed during its second pair
  r = run(fast("pairs.csv", out, " --shard 1/2 --resume"));
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("pair 1/2 s1_to_s0: complete, skipped (--resume)"), std::string::npos) << r.output;
  std::ifstream in(shard_summary(out, 1, 2));
  const nlohmann::json shard = nlohmann::json::parse(in);
  EXPECT_EQ(shard["skipped"], 1);
  EXPECT_EQ(shard["done"], 1);
  EXPECT_TRUE(fs::exists(out + "/s3_to_s2.json"));
}

}  // namespace
}  // namespace autoreg::test
