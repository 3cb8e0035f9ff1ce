// `autoreg search` on many processes, as a user runs it: --nproc ranks on Gloo over
// loopback. Two ranks of one pair each take the same search steps (ω, α second order, λ)
// as one rank of both pairs; a search checkpoint of two ranks resumes with one; a killed
// rank is restarted and the search ends where it would have; the retraining runs on the
// same ranks; validation runs decoupled, started by the search or on its own.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>

#include "autoreg/registration/archive.h"
#include "cli.h"

namespace autoreg::test {
namespace {

class DistributedSearch : public Cli {
 protected:
  void SetUp() override {
    Cli::SetUp();
    write_sphere_subjects(5);
    std::ofstream csv(path("data.csv"));
    csv << "image,labels,split\n";
    for (int s = 0; s < 5; ++s) csv << "s" << s << ".nii.gz,s" << s << "_seg.nii.gz," << (s < 3 ? "train" : "val") << "\n";
  }
  // A small search writing DIR `out`: step 1 warms up, steps 2 and 3 move α (second
  // order: its Hessian-vector product is summed too), step 2 moves λ. The operation costs
  // of the first run are every other run's (no budget: they change nothing but time).
  std::string search(const std::string& out, const std::string& more) const {
    const std::string costs = fs::exists(path("op_cost.json")) ? " --op-cost " + path("op_cost.json") : "";
    return "search --manifest " + path("data.csv") + " --out " + path(out) + " --cache " + path("cache") + costs +
           " --grid 16x16x16 --spacing 1.5 --threads 1 --warmup 0.34 --arch-every 1 --objective-every 2 --order second"
           " --max-forward-ms 0 --validate-every 1000 --checkpoint-every 1 " + more;
  }
  void keep_costs(const std::string& out) const {
    if (!fs::exists(path("op_cost.json"))) fs::copy_file(path(out) + "/op_cost.json", path("op_cost.json"));
  }
};

// The largest difference between two search checkpoints' ω, α and log λ, and whether
// they are at the same step.
double state_difference(const std::string& a, const std::string& b) {
  const registration::Archive x = registration::read_archive(a, "SEARCH"), y = registration::read_archive(b, "SEARCH");
  EXPECT_EQ(x.field("search.step", a), y.field("search.step", b));
  std::map<std::string, at::Tensor> theirs;
  for (const auto& [name, t] : y.tensors) theirs[name] = t;
  double d = 0;
  int compared = 0;
  for (const auto& [name, t] : x.tensors) {
    if (name.rfind("param/", 0) != 0 && name != "alpha" && name != "rho") continue;
    EXPECT_TRUE(theirs.count(name)) << name;
    if (!theirs.count(name)) continue;
    d = std::max(d, (t.to(at::kDouble) - theirs[name].to(at::kDouble)).abs().max().item<double>());
    ++compared;
  }
  EXPECT_GT(compared, 10);
  return d;
}

// Summation order is all that differs (float32 sums across processes instead of in one),
// as in train's test (test_distributed.cpp).
constexpr double kTolerance = 1e-5;

TEST_F(DistributedSearch, TwoRanksOfOnePairTakeTheStepsOfOneRankOfTwo) {
  Result one = run(search("one", "--steps 3 --retrain-steps 0 --batch 2"));
  ASSERT_EQ(one.code, 0) << one.output;
  keep_costs("one");
  Result two = run(search("two", "--steps 3 --retrain-steps 0 --nproc 2"));
  ASSERT_EQ(two.code, 0) << two.output;
  EXPECT_NE(two.output.find("data-parallel: 2 ranks, 2 pairs per step"), std::string::npos) << two.output;
  EXPECT_LT(state_difference(path("one/search.ckpt"), path("two/search.ckpt")), kTolerance);
  // One pair per step is another search: the comparison can tell them apart.
  Result single = run(search("single", "--steps 3 --retrain-steps 0"));
  ASSERT_EQ(single.code, 0) << single.output;
  EXPECT_GT(state_difference(path("one/search.ckpt"), path("single/search.ckpt")), 100 * kTolerance);
  // Rank 0 alone logs (one line per step) and writes the outputs.
  std::ifstream log(path("two/search.log.jsonl"));
  int lines = 0;
  for (std::string line; std::getline(log, line);) ++lines;
  EXPECT_EQ(lines, 3);
  EXPECT_TRUE(fs::exists(path("two/genotype.json")));
  EXPECT_TRUE(fs::exists(path("two/report.html")));

  // Validation ran decoupled (a watcher process): its last evaluation, of the last
  // checkpoint, is the summary's validation Dice, and the best checkpoint is kept.
  std::ifstream evaluations(path("two/search.validation.jsonl"));
  std::string line, last;
  while (std::getline(evaluations, line)) last = line;
  ASSERT_FALSE(last.empty()) << two.output;
  const nlohmann::json evaluated = nlohmann::json::parse(last);
  EXPECT_EQ(evaluated["step"], 3);
  std::ifstream summary_file(path("two/genotype.json"));
  const nlohmann::json summary = nlohmann::json::parse(summary_file);
  ASSERT_TRUE(summary["validation_dice"].is_number()) << summary.dump();
  EXPECT_NEAR(summary["validation_dice"].get<double>(), evaluated["validation_dice"].get<double>(), 1e-6);
  EXPECT_TRUE(fs::exists(path("two/search.best.ckpt")));

  // The same evaluation on its own (as on another machine sharing the folder): the
  // search's command with --evaluate evaluates the last checkpoint and ends, as the
  // search is over.
  fs::remove(path("two/search.validation.jsonl"));
  Result alone = run(search("two", "--steps 3 --retrain-steps 0 --nproc 2") + " --evaluate");
  EXPECT_NE(alone.code, 0) << "--nproc with --evaluate is refused";
  alone = run(search("two", "--steps 3 --retrain-steps 0") + " --evaluate");
  ASSERT_EQ(alone.code, 0) << alone.output;
  std::ifstream again(path("two/search.validation.jsonl"));
  ASSERT_TRUE(std::getline(again, line)) << alone.output;
  EXPECT_EQ(nlohmann::json::parse(line)["step"], 3);
  EXPECT_NEAR(nlohmann::json::parse(line)["validation_dice"].get<double>(), evaluated["validation_dice"].get<double>(), 1e-6);
}

TEST_F(DistributedSearch, ACheckpointOfTwoRanksResumesWithOneAndRetrainsOnTwo) {
  Result straight = run(search("straight", "--steps 4 --retrain-steps 2 --nproc 2"));
  ASSERT_EQ(straight.code, 0) << straight.output;
  keep_costs("straight");
  EXPECT_TRUE(fs::exists(path("straight/model.autoreg"))) << straight.output;
  // The retraining's validation ran decoupled: a line per checkpoint, the best kept.
  std::ifstream evaluations(path("straight/retrain.validation.jsonl"));
  std::string line, last;
  while (std::getline(evaluations, line)) last = line;
  ASSERT_FALSE(last.empty()) << straight.output;
  EXPECT_EQ(nlohmann::json::parse(last)["step"], 2);
  EXPECT_TRUE(fs::exists(path("straight/retrain.best.autoreg")));

  // Two ranks stopped after step 2 (a programming error on rank 1 at step 3: not
  // restarted), then one rank, no --batch: the checkpoint's global batch of 2.
  Result half = run_command("AUTOREG_INJECT_FAILURE=programming_error@3@1 " + std::string(AUTOREG_BIN) + " " +
                            search("resumed", "--steps 4 --retrain-steps 0 --nproc 2") + " 2>&1");
  ASSERT_NE(half.code, 0) << half.output;
  Result rest = run(search("resumed", "--steps 4 --retrain-steps 0 --resume"));
  ASSERT_EQ(rest.code, 0) << rest.output;
  EXPECT_NE(rest.output.find("resumed the search from"), std::string::npos) << rest.output;
  EXPECT_NE(rest.output.find("at step 2 of 4"), std::string::npos) << rest.output;
  EXPECT_LT(state_difference(path("straight/search.ckpt"), path("resumed/search.ckpt")), kTolerance);

  // A rank killed at step 3 under the supervisor: both restarted, on from step 2's
  // checkpoint, to the uninterrupted search's state.
  Result killed = run_command("AUTOREG_INJECT_FAILURE=worker_lost@3@0 " + std::string(AUTOREG_BIN) + " " +
                              search("killed", "--steps 4 --retrain-steps 0 --nproc 2 --max-restarts 1") + " 2>&1");
  ASSERT_EQ(killed.code, 0) << killed.output;
  std::ifstream failures(path("killed/failures.jsonl"));
  ASSERT_TRUE(std::getline(failures, line)) << killed.output;
  EXPECT_EQ(nlohmann::json::parse(line)["class"], "worker_lost") << line;
  EXPECT_LT(state_difference(path("straight/search.ckpt"), path("killed/search.ckpt")), kTolerance);
  // Another global batch is another search: refused, naming the option.
  Result other = run(search("resumed", "--steps 6 --retrain-steps 0 --resume --batch 3"));
  EXPECT_EQ(other.code, 2) << other.output;
  EXPECT_NE(other.output.find("batch was 2, is 3"), std::string::npos) << other.output;
}

TEST_F(DistributedSearch, FewerPairsThanRanksAreRefused) {
  Result r = run(search("few", "--steps 1 --retrain-steps 0 --nproc 2 --batch 1"));
  EXPECT_NE(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("at least one pair per rank"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace autoreg::test
