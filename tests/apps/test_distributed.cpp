// `autoreg train` on many processes, as a user runs it: --nproc ranks on Gloo over
// loopback. Two ranks of one pair each take the same steps as one rank of both pairs; a
// checkpoint of two ranks resumes with one; ranks killed again and again under the
// supervisor end with the uninterrupted run's weights; every failure class gets its
// diagnosis line and its action.
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <random>
#include <signal.h>
#include <sys/wait.h>
#include <thread>

#include "autoreg/io/volume.h"
#include "autoreg/registration/model_file.h"
#include "cli.h"

namespace autoreg::test {
namespace {

class Distributed : public Cli {
 protected:
  void SetUp() override {
    Cli::SetUp();
    write_sphere_subjects(6);  // s5 is validated against s4 only where a test lists it
    std::ofstream csv(path("data.csv"));
    csv << "image,labels,split\n";
    for (int s = 0; s < 5; ++s) csv << "s" << s << ".nii.gz,s" << s << "_seg.nii.gz," << (s == 4 ? "val" : "train") << "\n";
  }
  // train's options for a small pairwise run writing `model` (a cache shared by all runs).
  std::string train(const std::string& model, const std::string& more) const {
    return "train --manifest " + path("data.csv") + " --out " + path(model) + " --cache " + path("cache") +
           " --grid 16x16x16 --spacing 1.5 --lr 1e-3 --validate-every 1000 --threads 1 " + more;
  }
  std::vector<nlohmann::json> failures(const std::string& model) const {
    std::vector<nlohmann::json> out;
    std::ifstream in(path(model + ".failures.jsonl"));
    for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
    return out;
  }
};

// The largest difference between two models' weights.
double weight_difference(const std::string& a, const std::string& b) {
  const auto x = registration::load_model(a).network->parameters(), y = registration::load_model(b).network->parameters();
  EXPECT_EQ(x.size(), y.size());
  double d = 0;
  for (size_t i = 0; i < std::min(x.size(), y.size()); ++i) d = std::max(d, (x[i] - y[i]).abs().max().item<double>());
  return d;
}

// Summation order is all that differs between the two (float32 gradients summed across
// processes instead of accumulated in one), so the weights after a few Adam steps of
// 1e-3 agree to far below the step size.
constexpr double kTolerance = 1e-5;

TEST_F(Distributed, TwoRanksOfOnePairTakeTheStepsOfOneRankOfTwo) {
  Result one = run(train("one.autoreg", "--steps 3 --batch 2"));
  ASSERT_EQ(one.code, 0) << one.output;
  Result two = run(train("two.autoreg", "--steps 3 --nproc 2"));
  ASSERT_EQ(two.code, 0) << two.output;
  EXPECT_NE(two.output.find("data-parallel: 2 ranks, 2 pairs per step"), std::string::npos) << two.output;
  EXPECT_LT(weight_difference(path("one.autoreg"), path("two.autoreg")), kTolerance);
  // One pair per step is another run: the comparison can tell them apart.
  Result single = run(train("single.autoreg", "--steps 3"));
  ASSERT_EQ(single.code, 0) << single.output;
  EXPECT_GT(weight_difference(path("one.autoreg"), path("single.autoreg")), 100 * kTolerance);
  // Rank 0 alone logs: one line per step.
  std::ifstream log(path("two.autoreg.log.jsonl"));
  int lines = 0;
  for (std::string line; std::getline(log, line);) ++lines;
  EXPECT_EQ(lines, 3);
}

TEST_F(Distributed, ACheckpointOfTwoRanksResumesWithOne) {
  Result straight = run(train("straight.autoreg", "--steps 4 --nproc 2"));
  ASSERT_EQ(straight.code, 0) << straight.output;
  Result half = run(train("resumed.autoreg", "--steps 2 --nproc 2"));
  ASSERT_EQ(half.code, 0) << half.output;
  // One rank, no --batch: the checkpoint's global batch of 2.
  Result rest = run(train("resumed.autoreg", "--steps 4 --resume"));
  ASSERT_EQ(rest.code, 0) << rest.output;
  EXPECT_NE(rest.output.find("resumed from"), std::string::npos) << rest.output;
  EXPECT_LT(weight_difference(path("straight.autoreg"), path("resumed.autoreg")), kTolerance);
  // Another global batch is another run: refused, naming the option.
  Result other = run(train("resumed.autoreg", "--steps 6 --resume --batch 3"));
  EXPECT_EQ(other.code, 2) << other.output;
  EXPECT_NE(other.output.find("batch was 2, is 3"), std::string::npos) << other.output;
}

// The supervisor's ranks (its child processes).
std::vector<pid_t> children(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  std::vector<pid_t> out;
  for (pid_t c; in >> c;) out.push_back(c);
  return out;
}

TEST_F(Distributed, RanksKilledAgainAndAgainEndWithTheUninterruptedRunsWeights) {
  const std::string options = "--steps 40 --checkpoint-every 1 --nproc 2 --validation off";
  Result straight = run(train("straight.autoreg", options));
  ASSERT_EQ(straight.code, 0) << straight.output;
  // Each kill lands 1-4 steps after the last one (or the start), a random moment into a step.
  const auto logged_step = [&] {
    std::ifstream log(path("killed.autoreg.log.jsonl"));
    int64_t step = 0;
    for (std::string line; std::getline(log, line);) {
      const auto j = nlohmann::json::parse(line, nullptr, false);
      if (!j.is_discarded() && j.contains("step")) step = j["step"].get<int64_t>();
    }
    return step;
  };
  const int kills = 4;
  const pid_t supervisor = spawn_quietly(train("killed.autoreg", options + " --max-restarts 10"));
  ASSERT_GT(supervisor, 0);
  std::mt19937 rng(11);
  int done = 0, status = 0;
  bool ended = false;
  int64_t next = 1 + int64_t(rng() % 4);
  std::vector<pid_t> earlier;  // the ranks of attempts already killed
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(4);
  while (!ended && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (::waitpid(supervisor, &status, WNOHANG) == supervisor) {
      ended = true;
      break;
    }
    const int64_t step = logged_step();
    const auto ranks = children(supervisor);
    // Both ranks of an attempt after the last kill's (not a survivor of that attempt, nor
    // the killed one before it is reaped), and not in the last steps, where a rank that
    // has finished may already have exited.
    const bool fresh = ranks.size() == 2 && std::none_of(ranks.begin(), ranks.end(), [&](pid_t p) {
                         return std::find(earlier.begin(), earlier.end(), p) != earlier.end();
                       });
    if (done < kills && step >= next && step < 34 && fresh) {
      std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 150));
      ::kill(ranks[rng() % 2], SIGKILL);
      earlier.insert(earlier.end(), ranks.begin(), ranks.end());
      ++done;
      next = step + 1 + int64_t(rng() % 4);
    }
  }
  if (!ended) {
    ended = ::waitpid(supervisor, &status, 0) == supervisor;
  }
  ASSERT_TRUE(ended);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(done, kills) << "the run ended before the kills";
  const auto lines = failures("killed.autoreg");
  EXPECT_EQ(int(lines.size()), done);
  for (const auto& l : lines) {
    EXPECT_EQ(l["class"], "worker_lost") << l;
    EXPECT_NE(l["action"].get<std::string>().find("restart"), std::string::npos) << l;
  }
  // Bit for bit: the same checkpoints, the same steps, and a sum of two is the same in
  // either order.
  EXPECT_EQ(weight_difference(path("killed.autoreg"), path("straight.autoreg")), 0.0);
}

TEST_F(Distributed, AStoppedRankIsFoundHungWithinTheCollectiveTimeout) {
  Result r = run_command("AUTOREG_INJECT_FAILURE=collective_timeout@3@1 " + std::string(AUTOREG_BIN) + " " +
                         train("hung.autoreg", "--steps 4 --nproc 2 --max-restarts 1 --collective-timeout 3") + " 2>&1");
  ASSERT_EQ(r.code, 0) << r.output;
  const auto lines = failures("hung.autoreg");
  ASSERT_EQ(lines.size(), 1u) << r.output;
  EXPECT_EQ(lines[0]["class"], "collective_timeout");
  EXPECT_EQ(lines[0]["rank"], 1);
  EXPECT_NE(lines[0]["evidence"].get<std::string>().find("stopped"), std::string::npos) << lines[0];
  EXPECT_EQ(lines[0]["action"], "restart 1 of 1 from the last checkpoint");
  // Noticed by its peer's collective timing out (--collective-timeout 3), not by a death.
  EXPECT_NE(lines[0]["evidence"].get<std::string>().find("its peers' collective timed out"), std::string::npos) << lines[0];
  // Gloo says "Timed out waiting …" or "Application timeout caused pair closure".
  EXPECT_TRUE(r.output.find("Timed out") != std::string::npos || r.output.find("timeout") != std::string::npos) << r.output;
}

TEST_F(Distributed, EachFailureClassGetsItsDiagnosisAndAction) {
  struct Case {
    std::string inject;  // AUTOREG_INJECT_FAILURE
    int code;            // the command's exit code
    std::string cls, action;
  };
  const std::vector<Case> cases = {
      {"worker_lost@2@1", 0, "worker_lost", "restart 1 of 2 from the last checkpoint"},
      {"out_of_memory@2@0", 0, "out_of_memory", "restart 1 of 2 from the last checkpoint"},
      {"disk_full@2@1", 3, "disk_full", "stop: a restart would fail the same way"},
      {"programming_error@2@0", 3, "programming_error", "stop: a restart would fail the same way"},
      {"non_finite@2@1", 0, "non_finite", "rolled back to the last good state at a smaller learning rate (1 rollbacks so far)"},
  };
  for (const Case& c : cases) {
    const std::string model = c.cls + ".autoreg";
    Result r = run_command("AUTOREG_INJECT_FAILURE=" + c.inject + " " + std::string(AUTOREG_BIN) + " " +
                           train(model, "--steps 3 --checkpoint-every 1 --nproc 2 --max-restarts 2") + " 2>&1");
    EXPECT_EQ(r.code, c.code) << c.inject << "\n" << r.output;
    const auto lines = failures(model);
    ASSERT_EQ(lines.size(), 1u) << c.inject << "\n" << r.output;
    EXPECT_EQ(lines[0]["class"], c.cls) << lines[0];
    EXPECT_EQ(lines[0]["action"], c.action) << lines[0];
    EXPECT_EQ(lines[0]["step"].get<int64_t>() >= 1, true) << lines[0];
    EXPECT_EQ(fs::exists(path(model)), c.code == 0) << c.inject;
  }
  // An unreadable row: skipped, and listed.
  std::ofstream(path("data.csv"), std::ios::app) << "broken.nii.gz,,train\n";
  std::ofstream(path("broken.nii.gz")) << "not a volume";
  Result r = run(train("unreadable.autoreg", "--steps 1 --nproc 2 --max-unreadable 0.5"));
  ASSERT_EQ(r.code, 0) << r.output;
  const auto lines = failures("unreadable.autoreg");
  ASSERT_EQ(lines.size(), 1u) << r.output;
  EXPECT_EQ(lines[0]["class"], "unreadable_data");
  EXPECT_EQ(lines[0]["action"], "skipped");
  EXPECT_NE(lines[0]["evidence"].get<std::string>().find("broken.nii.gz"), std::string::npos) << lines[0];
}

TEST_F(Distributed, ValidationRunsDecoupledKeepsTheBestAndCanRunOnItsOwn) {
  // A second validation subject: pairwise validation registers consecutive ones.
  std::ofstream(path("data.csv"), std::ios::app) << "s5.nii.gz,s5_seg.nii.gz,val\n";
  Result r = run(train("v.autoreg", "--steps 4 --checkpoint-every 1"));
  ASSERT_EQ(r.code, 0) << r.output;
  std::vector<nlohmann::json> lines;
  std::ifstream in(path("v.autoreg.validation.jsonl"));
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  ASSERT_FALSE(lines.empty()) << r.output;
  EXPECT_EQ(lines.back()["step"], 4);  // the last checkpoint is always evaluated
  for (const auto& l : lines) {
    EXPECT_GE(l["validation_dice"].get<double>(), 0.0) << l;
    EXPECT_GE(l["folding_percent"].get<double>(), 0.0) << l;
    EXPECT_EQ(l["pairs"], 2) << l;
  }
  // The model's Dice is the watcher's for the last step; the best is kept in both forms.
  const auto model = registration::load_model(path("v.autoreg"));
  EXPECT_NEAR(std::stod(model.info.notes.at("validation_dice")), lines.back()["validation_dice"].get<double>(), 1e-6);
  EXPECT_TRUE(fs::exists(path("v.autoreg.best.ckpt")));
  EXPECT_NO_THROW(registration::load_model(path("v.autoreg.best.autoreg")));
  EXPECT_NE(r.output.find("validation Dice 0."), std::string::npos) << r.output;

  // On its own, after a run without it: evaluates the final checkpoint and ends.
  ASSERT_EQ(run(train("w.autoreg", "--steps 2 --validation off")).code, 0);
  EXPECT_FALSE(fs::exists(path("w.autoreg.validation.jsonl")));
  // (train --validation off writes no run description: make one as train does.)
  Result t = run(train("w.autoreg", "--steps 3 --resume --validation decoupled"));
  ASSERT_EQ(t.code, 0) << t.output;
  fs::remove(path("w.autoreg.validation.jsonl"));
  Result v = run("validate --run " + path("w.autoreg") + " --threads 1");
  ASSERT_EQ(v.code, 0) << v.output;
  std::ifstream again(path("w.autoreg.validation.jsonl"));
  std::string line;
  ASSERT_TRUE(static_cast<bool>(std::getline(again, line))) << v.output;
  EXPECT_EQ(nlohmann::json::parse(line)["step"], 3);
  EXPECT_EQ(run("validate --run " + path("missing.autoreg")).code, 2);
}

TEST_F(Distributed, RanksUnderAnotherLauncherDiagnoseTheirOwnFailures) {
  // As torchrun or srun start them: the environment alone, no autoreg supervisor.
  const std::string env = "WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(20000 + ::getpid() % 30000) +
                          " AUTOREG_INJECT_FAILURE=programming_error@2@1 ";
  const std::string command = std::string(AUTOREG_BIN) + " " + train("t.autoreg", "--steps 3 --validation off");
  Result r = run_command(env + "RANK=0 " + command + " > /dev/null 2>&1 & " + env + "RANK=1 " + command + " 2>&1; wait");
  const auto lines = failures("t.autoreg");
  ASSERT_EQ(lines.size(), 2u) << r.output;
  std::map<int, nlohmann::json> by_rank;
  for (const auto& l : lines) by_rank[l["rank"].get<int>()] = l;
  EXPECT_EQ(by_rank[1]["class"], "programming_error") << by_rank[1];
  EXPECT_EQ(by_rank[1]["action"], "ended: a restart would fail the same way");
  EXPECT_EQ(by_rank[1]["step"], 1);  // the last step it completed
  EXPECT_EQ(by_rank[0]["class"], "worker_lost") << by_rank[0];
  EXPECT_NE(by_rank[0]["action"].get<std::string>().find("may restart"), std::string::npos) << by_rank[0];
}

TEST_F(Distributed, OneSupervisedProcessResumesFromItsCheckpointAfterARestart) {
  Result straight = run(train("straight.autoreg", "--steps 4 --validation off"));
  ASSERT_EQ(straight.code, 0) << straight.output;
  Result r = run_command("AUTOREG_INJECT_FAILURE=worker_lost@3@0 " + std::string(AUTOREG_BIN) + " " +
                         train("one.autoreg", "--steps 4 --checkpoint-every 1 --validation off --nproc 1 --max-restarts 1") +
                         " 2>&1");
  ASSERT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("resumed from"), std::string::npos) << r.output;
  ASSERT_EQ(failures("one.autoreg").size(), 1u);
  EXPECT_EQ(weight_difference(path("one.autoreg"), path("straight.autoreg")), 0.0);
}

TEST_F(Distributed, Rank0FailingToPrepareStopsEveryRankWithItsDiagnosis) {
  // Rank 0 preprocesses while the others wait at a barrier: a manifest it cannot read
  // stops them all at once (not after the barrier's 2 hours), as bad input, not restarted.
  std::ofstream csv(path("broken.csv"));
  csv << "image,labels,split\nbroken0.nii.gz,,train\nbroken1.nii.gz,,train\n";
  csv.close();
  // Files that are there (the manifest's check passes on every rank) but not volumes.
  std::ofstream(path("broken0.nii.gz")) << "not a volume";
  std::ofstream(path("broken1.nii.gz")) << "not a volume";
  Result r = run_command(std::string(AUTOREG_BIN) + " train --manifest " + path("broken.csv") + " --out " +
                         path("broken.autoreg") + " --cache " + path("cache") +
                         " --grid 16x16x16 --steps 2 --threads 1 --nproc 2 --max-restarts 2 2>&1");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("rank 0 failed to prepare the run"), std::string::npos) << r.output;
  const auto lines = failures("broken.autoreg");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["class"], "bad_input") << lines[0].dump();
  EXPECT_EQ(lines[0]["rank"], 0) << lines[0].dump();
}

TEST_F(Distributed, LauncherOptionsAreChecked) {
  EXPECT_EQ(run(train("x.autoreg", "--steps 1 --nproc 0")).code, 1);
  EXPECT_EQ(run(train("x.autoreg", "--steps 1 --max-restarts 2")).code, 1);  // without --nproc
  EXPECT_EQ(run(train("x.autoreg", "--steps 1 --batch 0")).code, 1);
  EXPECT_EQ(run(train("x.autoreg", "--steps 1 --collective-timeout 0")).code, 1);
  Result r = run_command("RANK=1 " + std::string(AUTOREG_BIN) + " " + train("x.autoreg", "--steps 1") + " 2>&1");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("WORLD_SIZE"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace autoreg::test
